package xmltools

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// FuzzParser feeds random text in random pieces (cuts gives the pieces'
// lengths, in turn) and checks the parser's invariants:
//
//   - it never panics;
//   - the text chunks and the calls' raw text, in order, are the input;
//   - every call is start, one delta, end, with nothing between, and the
//     IDs count up from xml_call_1;
//   - a well-formed call's arguments are a JSON object; a malformed one's
//     are its raw text, of an offered tool, and diagnose explains them as
//     the parser found;
//   - a call of an unknown tool has a snake_case name;
//   - outside calls, it holds back at most a partial tag;
//   - text chunks are valid UTF-8 when the input is;
//   - the pieces change nothing: the chunks, adjacent text merged, are
//     those of the whole input, and of the input one byte at a time.
//
// Each input is also read as a list of tokens of the grammar (fuzzTokens),
// which random bytes seldom spell, and checked the same way.
//
// The seed corpus is in testdata/fuzz/FuzzParser, plus the inputs of the
// parser's table tests.
func FuzzParser(f *testing.F) {
	for _, tc := range parserCases {
		f.Add(tc.in, []byte{3, 1, 4, 1, 5, 9, 2, 6})
	}
	f.Add(splitResponse, []byte{1})
	f.Fuzz(func(t *testing.T, in string, cuts []byte) {
		checkSplits(t, in, cuts)
		// Random bytes seldom spell tags: the same bytes as tokens of
		// the grammar reach its corners.
		var tokens strings.Builder
		for i := 0; i < len(in) && i < 512; i++ {
			tokens.WriteString(fuzzTokens[int(in[i])%len(fuzzTokens)])
		}
		checkSplits(t, tokens.String(), cuts)
	})
}

// fuzzTokens are pieces of the grammar, right and wrong.
var fuzzTokens = []string{
	"<read_file>", "</read_file>", "<write_file>", "</write_file>", "<list_files>", "</list_files>",
	"<path>", "</path>", "<content>", "</content>", "<offset>", "</offset>", "<a_b>", "</a_b>",
	"<c>", "</c>", "<b>", "</b>", "<", ">", "</", "\n", "\r\n", " ", "x", "12", "é", "🎉",
	"<read_", "ile>", "\xe2", "<set_flags>", "</set_flags>", "<verbose>", "true", "</verbose>",
	"\n```", "~~~", "`", "<x_y>", "</x_y>",
}

// checkSplits parses in fed as pieces whose lengths cuts gives, as a
// whole and one byte at a time, checks the invariants and compares.
func checkSplits(t *testing.T, in string, cuts []byte) {
	t.Helper()
	var pieces []string
	for i, k := 0, 0; i < len(in); k++ {
		n := len(in) - i
		if len(cuts) > 0 {
			n = int(cuts[k%len(cuts)])%23 + 1
		}
		n = min(n, len(in)-i)
		pieces = append(pieces, in[i:i+n])
		i += n
	}
	got := checkParse(t, in, pieces)
	if want := checkParse(t, in, []string{in}); !slices.Equal(got, want) {
		t.Fatalf("input %q in pieces %q:\n got %s\nwant %s", in, pieces, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	if len(in) < 4096 {
		if one := describeChunks(parseAll(testTools, bytePieces(in)...)); !slices.Equal(got, one) {
			t.Fatalf("input %q one byte at a time:\n got %s\nwant %s", in, strings.Join(one, "\n     "), strings.Join(got, "\n     "))
		}
	}
}

// checkParse parses in, fed as pieces, checks the invariants and returns
// the chunks as describeChunks renders them.
func checkParse(t *testing.T, in string, pieces []string) []string {
	t.Helper()
	p := newParser(testTools)
	var spans, problems []string
	p.onCall = func(raw string) { spans = append(spans, raw) }
	p.onProblem = func(why string) { problems = append(problems, why) }
	var chunks []model.Chunk
	for _, s := range pieces {
		chunks = append(chunks, p.feed(s)...)
		if p.st == stText && len(p.buf) > maxName+1 {
			t.Fatalf("after %q, outside calls, the parser holds %d bytes: %q", s, len(p.buf), p.buf)
		}
	}
	chunks = append(chunks, p.close()...)

	var rebuilt strings.Builder
	validIn := utf8.ValidString(in)
	calls := 0
	for i := 0; i < len(chunks); i++ {
		c := chunks[i]
		switch c.Kind {
		case model.KindText:
			if c.Text == "" {
				t.Fatalf("empty text chunk")
			}
			if validIn && !utf8.ValidString(c.Text) {
				t.Fatalf("text chunk %q is not valid UTF-8", c.Text)
			}
			rebuilt.WriteString(c.Text)
		case model.KindToolCallStart:
			calls++
			id := "xml_call_" + strconv.Itoa(calls)
			if c.ToolCallID != id {
				t.Fatalf("call %d has ID %q, want %q", calls, c.ToolCallID, id)
			}
			if i+2 >= len(chunks) || chunks[i+1].Kind != model.KindToolCallDelta || chunks[i+2].Kind != model.KindToolCallEnd ||
				chunks[i+1].ToolCallID != id || chunks[i+2].ToolCallID != id {
				t.Fatalf("call %s is not start, delta, end: %v", id, describeChunks(chunks[i:min(i+3, len(chunks))]))
			}
			if calls > len(spans) {
				t.Fatalf("call %s has no span", id)
			}
			raw, args, name := spans[calls-1], chunks[i+1].ArgumentsDelta, c.ToolName
			rebuilt.WriteString(raw)
			if why := checkCall(t, name, args, raw); why != "" {
				if len(problems) == 0 || problems[0] != why {
					t.Fatalf("diagnose(%q) = %q, but the parser found %q", raw, why, problems)
				}
				problems = problems[1:]
			}
			i += 2
		default:
			t.Fatalf("unexpected chunk %v", describeChunks([]model.Chunk{c}))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("problems of no call: %q", problems)
	}
	if calls != len(spans) {
		t.Fatalf("%d calls, %d spans", calls, len(spans))
	}
	if rebuilt.String() != in {
		t.Fatalf("text and calls give back\n%q\nnot the input\n%q", rebuilt.String(), in)
	}
	return describeChunks(chunks)
}

// checkCall checks a call and returns diagnose's explanation of it, if
// it is malformed.
func checkCall(t *testing.T, name, args, raw string) string {
	t.Helper()
	known := slices.ContainsFunc(testTools, func(tl pipeline.Tool) bool { return tl.Name == name })
	if !strings.HasPrefix(raw, "<"+name+">") {
		t.Fatalf("call %s: raw text %q does not start with its tag", name, raw)
	}
	if strings.HasPrefix(args, "<") {
		if !known {
			t.Fatalf("malformed call of unknown tool %q", name)
		}
		if args != raw {
			t.Fatalf("malformed call %s: arguments %q, raw text %q", name, args, raw)
		}
		why, ok := diagnose(pipeline.ToolCall{Name: name, Arguments: json.RawMessage(args)})
		if !ok {
			t.Fatalf("diagnose does not explain malformed call %q", raw)
		}
		return why
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		t.Fatalf("call %s: arguments %q are not a JSON object: %v", name, args, err)
	}
	if !strings.HasSuffix(raw, "</"+name+">") {
		t.Fatalf("well-formed call %s: raw text %q does not end with its closing tag", name, raw)
	}
	if !known && !isSnake(name) {
		t.Fatalf("call of unknown tool %q, not snake_case", name)
	}
	if _, ok := diagnose(pipeline.ToolCall{Name: name, Arguments: json.RawMessage(args)}); ok {
		t.Fatalf("diagnose explains well-formed call %q", args)
	}
	return ""
}
