package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The splitters below cut a text into the pieces the encodings' regular
// expressions match, one after the other, before byte-pair encoding each
// piece on its own. They do what the backtracking expressions do (ordered
// alternation, greedy loops that give characters back), written out so
// that a split allocates nothing; FuzzSplit checks them against the
// expressions themselves.
//
// cl100k_base:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// o200k_base:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Characters are read as the expressions read them: a byte that is not
// valid UTF-8 is U+FFFD, a symbol.

// at returns the character at s[i] and its width; 0, 0 at the end.
func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return 0, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

// isSpace is \s, as the expressions' engine reads it: unicode.IsSpace.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isNewline(r rune) bool { return r == '\r' || r == '\n' }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(r rune) bool { return !isNewline(r) && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// class is a set of characters, with its ASCII members in a table: the
// common case is a byte lookup, not a call.
type class struct {
	ascii [utf8.RuneSelf]bool
	has   func(rune) bool
}

func newClass(has func(rune) bool) *class {
	c := &class{has: has}
	for r := range rune(utf8.RuneSelf) {
		c.ascii[r] = has(r)
	}
	return c
}

// The classes the expressions use.
var (
	letters         = newClass(isLetter)
	upperish        = newClass(isUpperish)
	lowerish        = newClass(isLowerish)
	symbolClass     = newClass(isSymbol)
	spaceClass      = newClass(isSpace)
	newlines        = newClass(isNewline)
	newlinesOrSlash = newClass(func(r rune) bool { return r == '\r' || r == '\n' || r == '/' })
	numberClass     = newClass(isNumber)
	prefixClass     = newClass(isPrefix)
)

// in reports whether the character at s[i] is in c, and its width; false,
// 0 at the end.
func (c *class) in(s string, i int) (bool, int) {
	if i >= len(s) {
		return false, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return c.ascii[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return c.has(r), w
}

// run returns the end of the run of characters in c from i.
func run(s string, i int, c *class) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if !c.ascii[b] {
				return i
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if !c.has(r) {
			return i
		}
		i += w
	}
	return i
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or -1.
// Case-insensitive as .NET folds: 'ſ' (U+017F) is an s.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return -1
	}
	r, w := at(s, i+1)
	switch r {
	case 's', 'S', 'ſ', 't', 'T', 'm', 'M', 'd', 'D':
		return i + 1 + w
	case 'r', 'R', 'v', 'V':
		if r2, w2 := at(s, i+1+w); r2 == 'e' || r2 == 'E' {
			return i + 1 + w + w2
		}
	case 'l', 'L':
		if r2, w2 := at(s, i+1+w); r2 == 'l' || r2 == 'L' {
			return i + 1 + w + w2
		}
	}
	return -1
}

// numbers is \p{N}{1,3} at i, or -1.
func numbers(s string, i int) int {
	j := i
	for range 3 {
		ok, w := numberClass.in(s, j)
		if !ok {
			break
		}
		j += w
	}
	if j == i {
		return -1
	}
	return j
}

// symbols is ` ?[^\s\p{L}\p{N}]+` followed by a run of tail, at i, or -1.
func symbols(s string, i int, tail *class) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	k := run(s, j, symbolClass)
	if k == j {
		return -1
	}
	return run(s, k, tail)
}

// spaces is \s*[\r\n]+|\s+(?!\S)|\s+ at i, or -1.
func spaces(s string, i int) int {
	end := run(s, i, spaceClass)
	if end == i {
		return -1
	}
	// \s*[\r\n]+: up to the run's last line break.
	for j := end; j > i; {
		r, w := utf8.DecodeLastRuneInString(s[i:j])
		if isNewline(r) {
			return j
		}
		j -= w
	}
	// \s+(?!\S): the run, less its last character if one follows.
	if end == len(s) {
		return end
	}
	_, w := utf8.DecodeLastRuneInString(s[i:end])
	if end-w > i {
		return end - w
	}
	return end // \s+: one character
}

// nextCl100k returns the end of the cl100k_base piece at i < len(s).
func nextCl100k(s string, i int) int {
	if j := contraction(s, i); j >= 0 {
		return j
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	letter, w := letters.in(s, i)
	if letter {
		return run(s, i+w, letters)
	}
	if prefix, _ := prefixClass.in(s, i); prefix {
		if next, _ := letters.in(s, i+w); next {
			return run(s, i+w, letters)
		}
	}
	if j := numbers(s, i); j >= 0 {
		return j
	}
	if j := symbols(s, i, newlines); j >= 0 {
		return j
	}
	if j := spaces(s, i); j >= 0 {
		return j
	}
	return i + w // unreachable: every character starts one of the above
}

// o200kWord is either of o200k_base's word alternatives at i, after its
// optional prefix, with upperFirst choosing which: U*W+ or U+W*, then a
// contraction if one follows. -1 if it does not match.
func o200kWord(s string, i int, upperFirst bool) int {
	prefix, w := prefixClass.in(s, i)
	starts := [2]int{i + w, i} // with the prefix first: the ? is greedy
	if !prefix {
		starts = [2]int{-1, i}
	}
	for _, p := range starts {
		if p < 0 {
			continue
		}
		end := -1
		if upperFirst {
			if u := run(s, p, upperish); u > p {
				end = run(s, u, lowerish)
			}
		} else {
			// U* greedy, giving characters back until W+ matches.
			u := run(s, p, upperish)
			for {
				if l := run(s, u, lowerish); l > u {
					end = l
					break
				}
				if u == p {
					break
				}
				_, w := utf8.DecodeLastRuneInString(s[p:u])
				u -= w
			}
		}
		if end >= 0 {
			if c := contraction(s, end); c >= 0 {
				return c
			}
			return end
		}
	}
	return -1
}

// nextO200k returns the end of the o200k_base piece at i < len(s).
func nextO200k(s string, i int) int {
	if j := o200kWord(s, i, false); j >= 0 {
		return j
	}
	if j := o200kWord(s, i, true); j >= 0 {
		return j
	}
	if j := numbers(s, i); j >= 0 {
		return j
	}
	if j := symbols(s, i, newlinesOrSlash); j >= 0 {
		return j
	}
	if j := spaces(s, i); j >= 0 {
		return j
	}
	_, w := at(s, i)
	return i + w // unreachable: every character starts one of the above
}
