package tool

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file checks flat schemas in a program without the JSON Schema
// validator. It finds what the validator finds in the same arguments and
// words it the same: the validator's English messages, with its numbers
// printed as it prints them (digits grouped by three, "1,000"; floats
// beyond six integer digits or below 0.0001 as "1.5×10⁰⁶").

// violation is one line of a schema error.
type violation struct {
	ptr  string
	text string
}

// check returns how obj, decoded arguments, fails f (none if it matches),
// as the validator would.
func (f *flatSchema) check(obj map[string]any) []violation {
	var vs []violation
	var missing []string
	for _, name := range f.reqOrder {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		vs = append(vs, violation{"", "missing property " + quote(missing[0])})
	default:
		vs = append(vs, violation{"", "missing properties " + joinQuoted(missing)})
	}
	var additional []string
	for name, v := range obj {
		rule, ok := f.props[name]
		if !ok {
			if f.closed {
				additional = append(additional, name)
			}
			continue
		}
		ptr := "/" + escapeToken(name)
		for _, text := range rule.check(v) {
			vs = append(vs, violation{ptr, text})
		}
	}
	if len(additional) > 0 {
		slices.Sort(additional)
		vs = append(vs, violation{"", "additional properties " + joinQuoted(additional) + " not allowed"})
	}
	return vs
}

// check returns what v, a property's decoded value, breaks of the rule. A
// value of the wrong type breaks the type alone.
func (r propRule) check(v any) []string {
	if r.types != nil {
		got := valueType(v)
		if !slices.Contains(r.types, got) && !(got == "number" && slices.Contains(r.types, "integer") && isIntegral(v.(json.Number))) {
			return []string{"got " + got + ", want " + strings.Join(r.types, " or ")}
		}
	}
	var out []string
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if r.minLen >= 0 && n < r.minLen {
			out = append(out, "minLength: got "+groupDigits(strconv.Itoa(n))+", want "+groupDigits(strconv.Itoa(r.minLen)))
		}
		if r.maxLen >= 0 && n > r.maxLen {
			out = append(out, "maxLength: got "+groupDigits(strconv.Itoa(n))+", want "+groupDigits(strconv.Itoa(r.maxLen)))
		}
	case json.Number:
		if !r.hasMin && !r.hasMax {
			break
		}
		n, ok := new(big.Rat).SetString(string(v))
		if !ok { // unreachable: the decoder read a JSON number
			break
		}
		if r.hasMin && n.Cmp(new(big.Rat).SetInt64(r.min)) < 0 {
			out = append(out, "minimum: got "+formatRat(n)+", want "+formatRat(new(big.Rat).SetInt64(r.min)))
		}
		if r.hasMax && n.Cmp(new(big.Rat).SetInt64(r.max)) > 0 {
			out = append(out, "maximum: got "+formatRat(n)+", want "+formatRat(new(big.Rat).SetInt64(r.max)))
		}
	}
	return out
}

// valueType names the JSON type of a decoded value as the validator does:
// a number is "number", integral or not.
func valueType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// isIntegral reports whether a number has no fractional part: 1.0 and 1e2
// are integers.
func isIntegral(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.IsInt()
}

// mismatch renders violations as CheckArguments's error, one line each,
// sorted by pointer and without duplicates; nil if there are none.
func mismatch(vs []violation) error {
	slices.SortFunc(vs, func(a, b violation) int {
		return cmp.Or(cmp.Compare(a.ptr, b.ptr), cmp.Compare(a.text, b.text))
	})
	vs = slices.Compact(vs)
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = displayPointer(v.ptr) + ": " + v.text
	}
	switch len(lines) {
	case 0:
		return nil
	case 1:
		return errors.New("arguments do not match the schema: " + lines[0])
	default:
		return errors.New("arguments do not match the schema:\n- " + strings.Join(lines, "\n- "))
	}
}

// displayPointer shows the root, whose pointer is empty, as "(root)".
func displayPointer(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}

// quote single-quotes s as the validator does: Go's escapes, with double
// quotes bare and single quotes escaped.
func quote(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// groupDigits groups the integer digits of a decimal number by three:
// "-1234567.5" becomes "-1,234,567.5".
func groupDigits(n string) string {
	sign, rest := "", n
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	intPart, frac, hasFrac := strings.Cut(rest, ".")
	var sb strings.Builder
	sb.WriteString(sign)
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			sb.WriteByte(',')
		}
		sb.WriteRune(c)
	}
	if hasFrac {
		sb.WriteByte('.')
		sb.WriteString(frac)
	}
	return sb.String()
}

// superscripts are the digits of an exponent as the validator prints it.
var superscripts = []string{"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"}

// formatRat prints a number as the validator prints a bound or the value
// that broke it: as the nearest float64, in its shortest digits; with
// grouped digits from 0.0001 up to 999,999.x, in scientific notation
// ("1.5×10⁰⁷", "1×10⁻⁰⁵") beyond; "∞" beyond float64's range.
func formatRat(r *big.Rat) string {
	f, _ := r.Float64()
	return formatFloat(f)
}

// formatFloat prints f as the validator's printer does ("%v"); -0 is "0".
func formatFloat(f float64) string {
	if f == 0 {
		f = 0 // not -0
	}
	if math.IsInf(f, 0) {
		if f < 0 {
			return "-∞"
		}
		return "∞"
	}
	// d.ddde±XX: the shortest digits that read back as f.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 6 {
		var sb strings.Builder
		sb.WriteString(mant)
		sb.WriteString("×10")
		if exp < 0 {
			sb.WriteString("⁻")
			exp = -exp
		}
		digits := strconv.Itoa(exp)
		if len(digits) < 2 {
			digits = "0" + digits
		}
		for _, c := range digits {
			sb.WriteString(superscripts[c-'0'])
		}
		return sb.String()
	}
	return groupDigits(strconv.FormatFloat(f, 'f', -1, 64))
}
