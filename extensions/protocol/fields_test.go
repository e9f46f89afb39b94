package protocol_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// q wraps field lines in a USER_QUESTION block starting at line 1; the
// first field line is line 2.
func q(body string) string { return "[USER_QUESTION]\n" + body + "[/USER_QUESTION]\n" }

func TestFieldLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want protocol.Question
	}{
		{"values may hold colons", q("category: choice\nquestion: Meet at 12:30 or see https://x.example/a:b?\n"),
			protocol.Question{Category: "choice", Question: "Meet at 12:30 or see https://x.example/a:b?"}},
		{"leading blanks and blanks around the value", q("  category:   choice  \n\tquestion:\tWhy?\t\n"),
			protocol.Question{Category: "choice", Question: "Why?"}},
		{"field names match ignoring case", q("Category: Choice\nQUESTION: Why?\nRequired: TRUE\n"),
			protocol.Question{Category: "choice", Question: "Why?", Required: true}},
		{"continuation lines join with newlines", q("category: choice\nquestion: First line\n  second line\n\n- a bullet\nhttps://x.example/\n"),
			protocol.Question{Category: "choice", Question: "First line\n  second line\n\n- a bullet\nhttps://x.example/"}},
		{"a text field may start on the next line", q("category: choice\nquestion:\n  What now?\n"),
			protocol.Question{Category: "choice", Question: "What now?"}},
		{"a colon not followed by a blank is not a field", q("category: choice\nquestion: Times:\nnote:10 and see:this\n"),
			protocol.Question{Category: "choice", Question: "Times:\nnote:10 and see:this"}},
		{"blank lines between fields", q("\ncategory: choice\n\n\nquestion: Why?\n\nrequired: no\n\n"),
			protocol.Question{Category: "choice", Question: "Why?"}},
		{"CRLF line ends", "[USER_QUESTION]\r\ncategory: choice\r\nquestion: A\r\n  B\r\noptions:\r\n - x\r\n - y\r\n[/USER_QUESTION]\r\n",
			protocol.Question{Category: "choice", Question: "A\n  B", Options: []string{"x", "y"}}},
		{"empty optional text is not given", q("category: choice\nquestion: Why?\ndefault:\n"),
			protocol.Question{Category: "choice", Question: "Why?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseOne(t, tt.in).(*protocol.Question)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestListFields(t *testing.T) {
	tests := []struct {
		name    string
		options string
		want    []string
	}{
		{"inline", "options: [a, b, c]\n", []string{"a", "b", "c"}},
		{"inline, one item", "options: [only]\n", []string{"only"}},
		{"inline, blanks trimmed", "options: [  a  ,b ,  c d ]\n", []string{"a", "b", "c d"}},
		{"inline, quoted commas", `options: ["a, b", c]` + "\n", []string{"a, b", "c"}},
		{"inline, escapes", `options: ["say \"hi\"", "back\\slash", "\n stays"]` + "\n", []string{`say "hi"`, `back\slash`, `\n stays`}},
		{"inline, brackets inside items", "options: [x [1], y]\n", []string{"x [1]", "y"}},
		{"inline, unicode", "options: [구독 (월/연간), 광고 기반]\n", []string{"구독 (월/연간)", "광고 기반"}},
		{"dash items", "options:\n- a\n  - b\n\t-\tc, d\n", []string{"a", "b", "c, d"}},
		{"dash items with blank lines", "options:\n\n- a\n\n- b\n\n", []string{"a", "b"}},
		{"dash items, quotes kept", "options:\n- \"a\"\n", []string{`"a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseOne(t, q("category: choice\nquestion: Which?\n"+tt.options)).(*protocol.Question)
			if !slices.Equal(got.Options, tt.want) {
				t.Errorf("got %q, want %q", got.Options, tt.want)
			}
		})
	}
}

func TestFieldErrors(t *testing.T) {
	const known = "(known: category, question, options, default, required)"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"missing required field", q("category: choice\n"),
			[]string{`line 1: [USER_QUESTION] is missing the required field "question"`}},
		{"missing two required fields", q("required: true\n"),
			[]string{`line 1: [USER_QUESTION] is missing the required field "category"`, `line 1: [USER_QUESTION] is missing the required field "question"`}},
		{"empty block", q(""),
			[]string{`line 1: [USER_QUESTION] is missing the required field "category"`, `line 1: [USER_QUESTION] is missing the required field "question"`}},
		{"empty required text", q("category: choice\nquestion:\n\n"),
			[]string{`line 3: the required field "question" is empty`}},
		{"unknown field", q("category: choice\nquestion: Q?\nquestoin: Q?\n"),
			[]string{`line 4: unknown field "questoin" in [USER_QUESTION] ` + known}},
		{"continuation that looks like a field", q("category: choice\nquestion: Q?\nNote: this is a field line\n"),
			[]string{`line 4: unknown field "Note" in [USER_QUESTION] ` + known}},
		{"unknown field's continuation is ignored", q("category: choice\nquestion: Q?\nextra: a\nmore\nmore\n"),
			[]string{`line 4: unknown field "extra" in [USER_QUESTION] ` + known}},
		{"duplicate field", q("category: choice\nquestion: A?\nQuestion: B?\n"),
			[]string{`line 4: duplicate field "question" in [USER_QUESTION] (first given at line 3)`}},
		{"bad bool", q("category: choice\nquestion: Q?\nrequired: 1\n"),
			[]string{`line 4: field "required" must be true, false, yes or no, not "1"`}},
		{"empty bool", q("category: choice\nquestion: Q?\nrequired:\n"),
			[]string{`line 4: field "required" must be true, false, yes or no, not ""`}},
		{"text after a bool", q("category: choice\nquestion: Q?\nrequired: true\nreally\n"),
			[]string{`line 5: unexpected text after field "required": only text fields continue on the next line`}},
		{"text before the first field", q("Here is my question\ncategory: choice\nquestion: Q?\n"),
			[]string{`line 2: expected a field line "name: value" in [USER_QUESTION] ` + known}},
		{"empty inline list", q("category: choice\nquestion: Q?\noptions: [ ]\n"),
			[]string{`line 4: field "options" is an empty list`}},
		{"empty dash list", q("category: choice\nquestion: Q?\noptions:\n\n"),
			[]string{`line 4: field "options" is an empty list`}},
		{"empty dash list before a field", q("category: choice\noptions:\nquestion: Q?\n"),
			[]string{`line 3: field "options" is an empty list`}},
		{"empty inline item", q("category: choice\nquestion: Q?\noptions: [a, , b]\n"),
			[]string{`line 4: field "options" has an empty item`}},
		{"trailing comma", q("category: choice\nquestion: Q?\noptions: [a, b,]\n"),
			[]string{`line 4: field "options" has an empty item`}},
		{"empty quoted item", q("category: choice\nquestion: Q?\noptions: [a, \"\"]\n"),
			[]string{`line 4: field "options" has an empty item`}},
		{"empty dash item", q("category: choice\nquestion: Q?\noptions:\n- a\n-\n"),
			[]string{`line 6: field "options" has an empty item`}},
		{"unterminated quote", q("category: choice\nquestion: Q?\noptions: [\"a, b]\n"),
			[]string{`line 4: field "options" has an unterminated quoted item`}},
		{"text after a quoted item", q("category: choice\nquestion: Q?\noptions: [\"a\" b, c]\n"),
			[]string{`line 4: field "options" has text after the quoted item "a"`}},
		{"list without brackets", q("category: choice\nquestion: Q?\noptions: a, b\n"),
			[]string{`line 4: field "options" must be a list: [a, b] on one line, or "- item" lines under an empty "name:" line`}},
		{"text among dash items", q("category: choice\nquestion: Q?\noptions:\n- a\nb\n"),
			[]string{`line 6: expected "- item" under "options", or a field line`}},
		{"dash items after an inline list", q("category: choice\nquestion: Q?\noptions: [a]\n- b\n"),
			[]string{`line 5: unexpected text after field "options": only text fields continue on the next line`}},
		{"several problems, in line order", q("categroy: choice\nquestion: Q?\nrequired: sure\n"),
			[]string{
				`line 1: [USER_QUESTION] is missing the required field "category"`,
				`line 2: unknown field "categroy" in [USER_QUESTION] ` + known,
				`line 4: field "required" must be true, false, yes or no, not "sure"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErrs(t, tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBools(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, "True": true, "TRUE": true, "yes": true, "Yes": true, "YES": true,
		"false": false, "False": false, "FALSE": false, "no": false, "No": false, "NO": false,
	} {
		t.Run(in, func(t *testing.T) {
			got := parseOne(t, q("category: choice\nquestion: Q?\nrequired: "+in+"\n")).(*protocol.Question)
			if got.Required != want {
				t.Errorf("got %v, want %v", got.Required, want)
			}
		})
	}
}
