package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// problem is one error in a block, before it is rendered as an [Error].
type problem struct {
	line int
	msg  string // without the "line N: " prefix
}

// continuation says what a line that is not a field line means.
type continuation uint8

const (
	contNone  continuation = iota // before the first field
	contText                      // continues the current text field
	contItems                     // is a "- item" of the current list field
	contNever                     // after a bool or inline list: must be blank
	contSkip                      // after an error in the current field: ignored
)

// parseFields parses the body of a block of kind k: the lines between its
// opening and closing tag lines. first is the number of the body's first line,
// open the number of the opening tag line.
func parseFields(k *kind, body string, first, open int) (*Fields, []problem) {
	f := &Fields{kind: k, open: open, vals: make([]fieldValue, len(k.fields))}
	var probs []problem
	var text strings.Builder // the current text field's value
	cur := -1                // index of the current field
	cont := contNone

	finish := func() {
		if cur < 0 {
			return
		}
		v := &f.vals[cur]
		switch {
		case cont == contText:
			v.text = strings.TrimSpace(text.String())
			text.Reset()
			if v.text == "" {
				if k.fields[cur].Required {
					probs = append(probs, problem{v.line, fmt.Sprintf("the required field %q is empty", k.fields[cur].Name)})
				}
				v.set = false
			}
		case cont == contItems && len(v.list) == 0:
			probs = append(probs, problem{v.line, fmt.Sprintf("field %q is an empty list", k.fields[cur].Name)})
		}
		cur = -1
	}

	ln := first
	for rest := body; rest != ""; ln++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		for line != "" && isBlank(line[len(line)-1]) {
			line = line[:len(line)-1]
		}

		if name, value, ok := fieldLine(line); ok {
			finish()
			i := k.field(name)
			if i < 0 {
				probs = append(probs, problem{ln, fmt.Sprintf("unknown field %q in [%s] (known: %s)", name, k.name, k.known)})
				cont = contSkip
				continue
			}
			spec, v := k.fields[i], &f.vals[i]
			if v.line != 0 {
				probs = append(probs, problem{ln, fmt.Sprintf("duplicate field %q in [%s] (first given at line %d)", spec.Name, k.name, v.line)})
				cont = contSkip
				continue
			}
			v.set, v.line, cur = true, ln, i
			value = strings.TrimSpace(value)
			switch spec.Type {
			case TextField:
				text.WriteString(value)
				cont = contText
			case BoolField:
				b, ok := parseBool(value)
				if !ok {
					probs = append(probs, problem{ln, fmt.Sprintf("field %q must be true, false, yes or no, not %q", spec.Name, value)})
					cont = contSkip
					continue
				}
				v.b, cont = b, contNever
			case ListField:
				if value == "" {
					cont = contItems
					continue
				}
				list, msg := parseInlineList(value)
				if msg != "" {
					probs = append(probs, problem{ln, fmt.Sprintf("field %q %s", spec.Name, msg)})
					cont = contSkip
					continue
				}
				v.list, cont = list, contNever
			}
			continue
		}

		blank := line == "" || strings.TrimLeft(line, " \t\v\f") == ""
		switch cont {
		case contText:
			text.WriteByte('\n')
			text.WriteString(line)
		case contItems:
			if blank {
				continue
			}
			item, ok := dashItem(line)
			switch {
			case !ok:
				probs = append(probs, problem{ln, fmt.Sprintf(`expected "- item" under %q, or a field line`, k.fields[cur].Name)})
				cont = contSkip
			case item == "":
				probs = append(probs, problem{ln, fmt.Sprintf("field %q has an empty item", k.fields[cur].Name)})
				cont = contSkip
			default:
				f.vals[cur].list = append(f.vals[cur].list, item)
			}
		case contNone:
			if !blank {
				probs = append(probs, problem{ln, fmt.Sprintf(`expected a field line "name: value" in [%s] (known: %s)`, k.name, k.known)})
				cont = contSkip
			}
		case contNever:
			if !blank {
				probs = append(probs, problem{ln, fmt.Sprintf("unexpected text after field %q: only text fields continue on the next line", k.fields[cur].Name)})
				cont = contSkip
			}
		}
	}
	finish()

	for i, spec := range k.fields {
		if spec.Required && f.vals[i].line == 0 {
			probs = append(probs, problem{open, fmt.Sprintf("[%s] is missing the required field %q", k.name, spec.Name)})
		}
	}
	slices.SortStableFunc(probs, func(a, b problem) int { return a.line - b.line })
	return f, probs
}

// fieldLine splits a field line "name: value". The name is an identifier at
// the start of the line (after optional blanks), followed at once by a colon,
// and the colon by a blank or the end of the line, so that "https://x" or
// "12:30" are not field lines.
func fieldLine(line string) (name, value string, ok bool) {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	start := i
	if i == len(line) || !isIdentStart(line[i]) {
		return "", "", false
	}
	for i++; i < len(line) && isIdentByte(line[i]); i++ {
	}
	if i == len(line) || line[i] != ':' {
		return "", "", false
	}
	if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
		return "", "", false
	}
	return line[start:i], line[i+1:], true
}

func isIdentStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// dashItem returns the item of a "- item" line. A line that is a lone "-" is
// an empty item.
func dashItem(line string) (string, bool) {
	s := strings.TrimLeft(line, " \t")
	if s == "" || s[0] != '-' {
		return "", false
	}
	if len(s) > 1 && s[1] != ' ' && s[1] != '\t' {
		return "", false // "-5", "--flag": not an item
	}
	return strings.TrimSpace(s[1:]), true
}

func parseBool(s string) (b, ok bool) {
	switch {
	case strings.EqualFold(s, "true"), strings.EqualFold(s, "yes"):
		return true, true
	case strings.EqualFold(s, "false"), strings.EqualFold(s, "no"):
		return false, true
	}
	return false, false
}

// parseInlineList parses [a, b, "c, d"]. Items are trimmed; a double-quoted
// item may hold commas and the escapes \" and \\. On failure it returns a
// message that completes `field "options" ...`.
func parseInlineList(v string) ([]string, string) {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, `must be a list: [a, b] on one line, or "- item" lines under an empty "name:" line`
	}
	in := v[1 : len(v)-1]
	if strings.TrimSpace(in) == "" {
		return nil, "is an empty list"
	}
	var items []string
	for i := 0; ; {
		for i < len(in) && (in[i] == ' ' || in[i] == '\t') {
			i++
		}
		var item string
		if i < len(in) && in[i] == '"' {
			var b strings.Builder
			closed := false
			for i++; i < len(in); i++ {
				c := in[i]
				if c == '\\' && i+1 < len(in) && (in[i+1] == '"' || in[i+1] == '\\') {
					b.WriteByte(in[i+1])
					i++
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(c)
			}
			if !closed {
				return nil, "has an unterminated quoted item"
			}
			item = b.String()
			for i < len(in) && (in[i] == ' ' || in[i] == '\t') {
				i++
			}
			if i < len(in) && in[i] != ',' {
				return nil, fmt.Sprintf("has text after the quoted item %q", item)
			}
		} else {
			j := strings.IndexByte(in[i:], ',')
			if j < 0 {
				j = len(in) - i
			}
			item = strings.TrimSpace(in[i : i+j])
			i += j
		}
		if strings.TrimSpace(item) == "" {
			return nil, "has an empty item"
		}
		items = append(items, item)
		if i >= len(in) {
			return items, ""
		}
		i++ // the comma
	}
}
