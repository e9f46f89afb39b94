package xmltools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// testTools are the tools the parser tests offer.
var testTools = []pipeline.Tool{
	tool("read_file", `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}`),
	tool("write_file", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`),
	tool("set_flags", `{"type":"object","properties":{
		"verbose":{"type":"boolean"},"ratio":{"type":"number"},"count":{"type":"integer"},
		"tags":{"type":"array","items":{"type":"string"}},"meta":{"type":"object"},
		"level":{"type":["integer","null"]},"note":{"type":["string","null"]},"any":{}}}`),
	tool("list_files", ``),
}

func tool(name, schema string) pipeline.Tool {
	return pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: name, Description: "The " + name + " tool.", Parameters: json.RawMessage(schema)}}
}

// describeChunks renders chunks one a line, adjacent text merged:
//
//	text "hello"
//	start xml_call_1 read_file
//	delta xml_call_1 {"path":"a"}
//	end xml_call_1
func describeChunks(chunks []model.Chunk) []string {
	var out []string
	var text strings.Builder
	inText := false
	flush := func() {
		if inText {
			out = append(out, fmt.Sprintf("text %q", text.String()))
			text.Reset()
			inText = false
		}
	}
	for _, c := range chunks {
		switch c.Kind {
		case model.KindText:
			text.WriteString(c.Text)
			inText = true
		case model.KindToolCallStart:
			flush()
			out = append(out, "start "+c.ToolCallID+" "+c.ToolName)
		case model.KindToolCallDelta:
			flush()
			out = append(out, "delta "+c.ToolCallID+" "+c.ArgumentsDelta)
		case model.KindToolCallEnd:
			flush()
			out = append(out, "end "+c.ToolCallID)
		default:
			flush()
			out = append(out, c.Kind.String())
		}
	}
	flush()
	return out
}

// parseAll feeds pieces to a new parser and closes it.
func parseAll(tools []pipeline.Tool, pieces ...string) []model.Chunk {
	p := newParser(tools)
	var out []model.Chunk
	for _, s := range pieces {
		out = append(out, p.feed(s)...)
	}
	return append(out, p.close()...)
}

func call(id, name, args string) []string {
	return []string{"start " + id + " " + name, "delta " + id + " " + args, "end " + id}
}

func lines(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, fmt.Sprintf("text %q", p))
		case []string:
			out = append(out, p...)
		}
	}
	return out
}

type parserCase struct {
	name string
	in   string
	want []string
	// why is diagnose's explanation of each malformed call, in order.
	why []string
}

var parserCases = []parserCase{
	{name: "plain text", in: "Hello, world.", want: lines("Hello, world.")},
	{name: "empty", in: "", want: nil},
	{
		name: "one call in text",
		in:   "I will read it.\n<read_file>\n<path>notes.txt</path>\n</read_file>\nDone.",
		want: lines("I will read it.\n", call("xml_call_1", "read_file", `{"path":"notes.txt"}`), "\nDone."),
	},
	{
		name: "two calls",
		in:   "<read_file><path>a</path></read_file><write_file><path>b</path><content>x</content></write_file>",
		want: lines(call("xml_call_1", "read_file", `{"path":"a"}`), call("xml_call_2", "write_file", `{"path":"b","content":"x"}`)),
	},
	{name: "bold in prose", in: "This is <b>bold</b> and <i>italic</i>.", want: lines("This is <b>bold</b> and <i>italic</i>.")},
	{name: "less than in prose", in: "if a < b && c > d { x <- y }", want: lines("if a < b && c > d { x <- y }")},
	{name: "html block", in: "<ul>\n<li>one</li>\n<li>two</li>\n</ul>", want: lines("<ul>\n<li>one</li>\n<li>two</li>\n</ul>")},
	{name: "partial tag at the end", in: "Now reading <read_file", want: lines("Now reading <read_file")},
	{name: "lone < at the end", in: "a <", want: lines("a <")},
	{name: "closing tag in prose", in: "stray </read_file> here", want: lines("stray </read_file> here")},
	{name: "tool named in prose", in: "Use <read_file> to read a file.", want: lines("Use <read_file> to read a file.")},
	{
		// The rule's price: prose shaped like a value without its tags.
		name: "tool named in prose, closed on the next line",
		in:   "Use <read_file>\nto read.\n</read_file> closes it.",
		want: lines("Use ", call("xml_call_1", "read_file", "<read_file>\nto read.\n</read_file>"), " closes it."),
		why:  []string{`the text "to read." is outside any parameter: between <read_file> and </read_file>, write only parameters, each as <name>value</name>`},
	},
	{name: "tool named in prose, then a line", in: "Use <read_file> to read.\nThen </read_file>.", want: lines("Use <read_file> to read.\nThen </read_file>.")},
	{
		name: "bare value",
		in:   "<read_file>notes.txt</read_file>!",
		want: lines(call("xml_call_1", "read_file", "<read_file>notes.txt</read_file>"), "!"),
		why:  []string{`the text "notes.txt" is outside any parameter: between <read_file> and </read_file>, write only parameters, each as <name>value</name>`},
	},
	{
		name: "bare value on its own line",
		in:   "<read_file>\n  notes.txt\n  </read_file>",
		want: lines(call("xml_call_1", "read_file", "<read_file>\n  notes.txt\n  </read_file>")),
		why:  []string{`the text "notes.txt" is outside any parameter: between <read_file> and </read_file>, write only parameters, each as <name>value</name>`},
	},
	{name: "tool named in code", in: "The `<read_file>` tool.", want: lines("The `<read_file>` tool.")},
	{name: "tool tag then arrow", in: "<read_file> <- this one", want: lines("<read_file> <- this one")},
	{name: "tool tag then comment", in: "<read_file><!-- x --></read_file>", want: lines("<read_file><!-- x --></read_file>")},
	{
		name: "call without parameters",
		in:   "<list_files></list_files>",
		want: lines(call("xml_call_1", "list_files", `{}`)),
	},
	{
		name: "code in a value",
		in:   "<write_file>\n<path>main.go</path>\n<content>\nif a < b {\n\treturn \"<b>\" + s </content2>\n}\n</content>\n</write_file>",
		want: lines(call("xml_call_1", "write_file", `{"path":"main.go","content":"if a < b {\n\treturn \"<b>\" + s </content2>\n}"}`)),
	},
	{
		name: "a value holding the call's closing tag",
		in:   "<write_file><path>doc.md</path><content>end with </write_file>, then</content></write_file>",
		want: lines(call("xml_call_1", "write_file", `{"path":"doc.md","content":"end with </write_file>, then"}`)),
	},
	{
		name: "nested tags in a value",
		in:   "<read_file><path><b>x</b></path></read_file>",
		want: lines(call("xml_call_1", "read_file", `{"path":"<b>x</b>"}`)),
	},
	{
		name: "one line break trimmed at each end",
		in:   "<write_file><path>a</path><content>\n\nline 1\nline 2\n\n</content></write_file>",
		want: lines(call("xml_call_1", "write_file", `{"path":"a","content":"\nline 1\nline 2\n"}`)),
	},
	{
		name: "crlf trimmed",
		in:   "<write_file>\r\n<path>a</path>\r\n<content>\r\nx\r\n</content>\r\n</write_file>",
		want: lines(call("xml_call_1", "write_file", `{"path":"a","content":"x"}`)),
	},
	{
		name: "spaces kept",
		in:   "<write_file><path> a b </path><content>  </content></write_file>",
		want: lines(call("xml_call_1", "write_file", `{"path":" a b ","content":"  "}`)),
	},
	{
		name: "multi-byte text",
		in:   "héllo 世界 <read_file><path>ファイル.txt</path></read_file> 🎉",
		want: lines("héllo 世界 ", call("xml_call_1", "read_file", `{"path":"ファイル.txt"}`), " 🎉"),
	},
	{
		name: "typed values",
		in: "<set_flags><verbose>True</verbose><ratio> 0.5 </ratio><count>3</count><tags>[\"a\", \"b\"]</tags>" +
			"<meta>{\"k\": 1}</meta><level>null</level><note>null</note><any>7</any><extra>8</extra></set_flags>",
		want: lines(call("xml_call_1", "set_flags", `{"verbose":true,"ratio":0.5,"count":3,"tags":["a","b"],"meta":{"k":1},"level":null,"note":"null","any":"7","extra":"8"}`)),
	},
	{
		name: "values that are not their type stay strings",
		in:   "<set_flags><verbose>yes</verbose><ratio>half</ratio><count>1.5</count><tags>a, b</tags><meta>[1]</meta><level>2</level></set_flags>",
		want: lines(call("xml_call_1", "set_flags", `{"verbose":"yes","ratio":"half","count":"1.5","tags":"a, b","meta":"[1]","level":2}`)),
	},
	{
		name: "integer parameter",
		in:   "<read_file><path>a</path><offset>10</offset><limit>-2</limit></read_file>",
		want: lines(call("xml_call_1", "read_file", `{"path":"a","offset":10,"limit":-2}`)),
	},
	{
		name: "unclosed call at the end",
		in:   "Reading.\n<read_file>\n",
		want: lines("Reading.\n", call("xml_call_1", "read_file", "<read_file>\n")),
		why:  []string{"the <read_file> call was never closed with </read_file> (was your answer cut off?)"},
	},
	{
		name: "unclosed call after a parameter",
		in:   "<read_file><path>a</path>",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path>")),
		why:  []string{"the <read_file> call was never closed with </read_file> (was your answer cut off?)"},
	},
	{
		name: "unclosed parameter",
		in:   "<read_file>\n<path>a</read_file>\nMore text.",
		want: lines(call("xml_call_1", "read_file", "<read_file>\n<path>a</read_file>\nMore text.")),
		why:  []string{"the <path> parameter was never closed with </path>, so the rest of your answer was taken as its value"},
	},
	{
		name: "partial parameter tag at the end",
		in:   "<read_file>\n<pa",
		want: lines(call("xml_call_1", "read_file", "<read_file>\n<pa")),
		why:  []string{"the <read_file> call was never closed with </read_file> (was your answer cut off?)"},
	},
	{
		name: "text between parameters",
		in:   "<read_file><path>a</path> and then notes.txt\n</read_file>after",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path> and then notes.txt\n</read_file>"), "after"),
		why:  []string{`the text "and then notes.txt" is outside any parameter: between <read_file> and </read_file>, write only parameters, each as <name>value</name>`},
	},
	{
		name: "repeated parameter",
		in:   "<read_file><path>a</path><path>b</path></read_file>",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path><path>b</path></read_file>")),
		why:  []string{"the <path> parameter is given twice; give each parameter once"},
	},
	{
		name: "stray closing tag",
		in:   "<read_file><path>a</path></write_file></read_file>",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path></write_file></read_file>")),
		why:  []string{"the closing tag </write_file> closes nothing: between <read_file> and </read_file>, write only parameters, each as <name>value</name>"},
	},
	{
		name: "bad tag",
		in:   "<read_file><path>a</path><bad tag>x</bad></read_file>",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path><bad tag>x</bad></read_file>")),
		why:  []string{`"<bad tag>" is not a parameter tag: between <read_file> and </read_file>, write only parameters, each as <name>value</name> (a name is letters, digits, '_', '-' or '.')`},
	},
	{
		name: "malformed call then a good one",
		in:   "<read_file><path>a</path>oops</read_file><read_file><path>b</path></read_file>",
		want: lines(call("xml_call_1", "read_file", "<read_file><path>a</path>oops</read_file>"), call("xml_call_2", "read_file", `{"path":"b"}`)),
		why:  []string{`the text "oops" is outside any parameter: between <read_file> and </read_file>, write only parameters, each as <name>value</name>`},
	},
	{
		name: "unknown tool",
		in:   "Finished.\n<attempt_completion>\n<result>All done.</result>\n</attempt_completion>",
		want: lines("Finished.\n", call("xml_call_1", "attempt_completion", `{"result":"All done."}`)),
	},
	{name: "unknown tag in prose", in: "<my_var> is a placeholder", want: lines("<my_var> is a placeholder")},
	{name: "unknown tag, text inside", in: "<foo_bar>\ntext\n</foo_bar>", want: lines("<foo_bar>\ntext\n</foo_bar>")},
	{name: "unknown tag, no parameters", in: "<foo_bar></foo_bar>", want: lines("<foo_bar></foo_bar>")},
	{name: "unknown tag, unclosed", in: "<foo_bar><x>1</x>", want: lines("<foo_bar><x>1</x>")},
	{name: "unknown tag, text after a parameter", in: "<foo_bar><x>1</x> and more</foo_bar>", want: lines("<foo_bar><x>1</x> and more</foo_bar>")},
	{name: "not snake case", in: "<Foo_Bar><x>1</x></Foo_Bar><foo-bar><x>1</x></foo-bar>", want: lines("<Foo_Bar><x>1</x></Foo_Bar><foo-bar><x>1</x></foo-bar>")},
	{
		name: "unknown call in a code block",
		in:   "Config:\n```xml\n<server_config>\n<port>8080</port>\n</server_config>\n```\n<attempt_completion><result>ok</result></attempt_completion>",
		want: lines("Config:\n```xml\n<server_config>\n<port>8080</port>\n</server_config>\n```\n", call("xml_call_1", "attempt_completion", `{"result":"ok"}`)),
	},
	{
		name: "known call in a code block",
		in:   "~~~~\n<read_file><path>a</path></read_file>\n~~~~",
		want: lines("~~~~\n", call("xml_call_1", "read_file", `{"path":"a"}`), "\n~~~~"),
	},
	{name: "not a fence", in: "a ```\n<a_b><c>1</c></a_b>", want: lines("a ```\n", call("xml_call_1", "a_b", `{"c":"1"}`))},
	{name: "hermes style", in: `<tool_call>{"name": "read_file"}</tool_call>`, want: lines(`<tool_call>{"name": "read_file"}</tool_call>`)},
	{
		name: "unknown wrapper around a call",
		in:   "<tool_call>\n<read_file>\n<path>a</path>\n</read_file>\n</tool_call>",
		want: lines("<tool_call>\n", call("xml_call_1", "read_file", `{"path":"a"}`), "\n</tool_call>"),
	},
	{
		name: "a call in an unknown call's value",
		in:   "<foo_bar><x><read_file><path>a</path></read_file></x></foo_bar>",
		want: lines("<foo_bar><x>", call("xml_call_1", "read_file", `{"path":"a"}`), "</x></foo_bar>"),
	},
	{
		name: "a known call in a malformed known call is its text",
		in:   "<write_file><path>a</path>\n<read_file><path>b</path></read_file>",
		want: lines(call("xml_call_1", "write_file", "<write_file><path>a</path>\n<read_file><path>b</path></read_file>")),
		why:  []string{"the <write_file> call was never closed with </write_file> (was your answer cut off?)"},
	},
	{
		name: "long name is text",
		in:   "<" + strings.Repeat("a_", 40) + "><x>1</x></" + strings.Repeat("a_", 40) + ">",
		want: lines("<" + strings.Repeat("a_", 40) + "><x>1</x></" + strings.Repeat("a_", 40) + ">"),
	},
	{
		name: "invalid utf-8 passes through",
		in:   "a\xff\xc3<read_file><path>\xe2\x82</path></read_file>\xe2",
		want: lines("a\xff\xc3", call("xml_call_1", "read_file", `{"path":"\ufffd\ufffd"}`), "\xe2"),
	},
}

func TestParser(t *testing.T) {
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			got := describeChunks(parseAll(testTools, tc.in))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Parse(%q):\n got %s\nwant %s", tc.in, strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
			}
			var why []string
			for _, c := range assembleCalls(parseAll(testTools, tc.in)) {
				if r, ok := diagnose(c); ok {
					why = append(why, r)
				}
			}
			if !slices.Equal(why, tc.why) {
				t.Errorf("diagnose:\n got %q\nwant %q", why, tc.why)
			}
		})
	}
}

// assembleCalls gathers the calls of a chunk sequence, as the runtime does.
func assembleCalls(chunks []model.Chunk) []pipeline.ToolCall {
	var calls []pipeline.ToolCall
	for _, c := range chunks {
		switch c.Kind {
		case model.KindToolCallStart:
			calls = append(calls, pipeline.ToolCall{ID: c.ToolCallID, Name: c.ToolName})
		case model.KindToolCallDelta:
			calls[len(calls)-1].Arguments = append(calls[len(calls)-1].Arguments, c.ArgumentsDelta...)
		}
	}
	return calls
}

// splitResponse has text, two calls and multi-byte characters.
const splitResponse = "Let me look — first the notes: <read_file>\n<path>notes/日本.txt</path>\n<offset>2</offset>\n</read_file>" +
	"\nand then <b>write</b> a < b:\n<write_file>\n<path>out.txt</path>\n<content>\nif a < b {\n\tx := \"</path>\"\n}\n</content>\n</write_file>\nThat's all. 🎉"

// TestParserSplits feeds inputs in two pieces split at every byte offset,
// and one byte at a time: the chunks, adjacent text merged, are the same
// as from the whole input.
func TestParserSplits(t *testing.T) {
	inputs := []string{splitResponse}
	for _, tc := range parserCases {
		inputs = append(inputs, tc.in)
	}
	for _, in := range inputs {
		want := describeChunks(parseAll(testTools, in))
		for i := 0; i <= len(in); i++ {
			got := describeChunks(parseAll(testTools, in[:i], in[i:]))
			if !slices.Equal(got, want) {
				t.Fatalf("input %q split at %d (%q | %q):\n got %s\nwant %s", in, i, in[:i], in[i:], strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
		}
		got := describeChunks(parseAll(testTools, bytePieces(in)...))
		if !slices.Equal(got, want) {
			t.Fatalf("input %q one byte at a time:\n got %s\nwant %s", in, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
	// The response itself, checked once.
	want := lines("Let me look — first the notes: ",
		call("xml_call_1", "read_file", `{"path":"notes/日本.txt","offset":2}`),
		"\nand then <b>write</b> a < b:\n",
		call("xml_call_2", "write_file", `{"path":"out.txt","content":"if a < b {\n\tx := \"</path>\"\n}"}`),
		"\nThat's all. 🎉")
	if got := describeChunks(parseAll(testTools, splitResponse)); !slices.Equal(got, want) {
		t.Errorf("split response:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func bytePieces(s string) []string {
	pieces := make([]string, len(s))
	for i := range len(s) {
		pieces[i] = s[i : i+1]
	}
	return pieces
}

// TestParserStreamsText: text goes out as soon as it cannot begin a call;
// only a possible partial tag or character is held back.
func TestParserStreamsText(t *testing.T) {
	p := newParser(testTools)
	steps := []struct {
		feed string
		want []string
	}{
		{"Hello <b>wor", lines("Hello <b>wor")},
		{"ld</b>, reading <rea", lines("ld</b>, reading ")}, // "<rea" may become <read_file>
		{"dy> now <read_f", lines("<ready> now ")},
		{"ile>", nil},     // a tool's tag: is it a call?
		{" to read", nil}, // prose, or a value without its tags?
		{".\n", nil},      // it may still close on the next line
		{" So", lines("<read_file> to read.\n So")}, // prose
		{" 日\xe6", lines(" 日")},                     // half a character is held
		{"\x9c\xac <read_file>\n<path>a", append(lines("本 "), "start xml_call_1 read_file")},
		{"</path>\n", nil},
		{"</read_file>", lines([]string{"delta xml_call_1 {\"path\":\"a\"}", "end xml_call_1"})},
		{"<foo_bar><x>1</x>", nil}, // an unknown tool's call, maybe
		{" no.", lines("<foo_bar><x>1</x> no.")},
	}
	for i, s := range steps {
		if got := describeChunks(p.feed(s.feed)); !slices.Equal(got, s.want) {
			t.Errorf("step %d: feed(%q) = %q, want %q", i, s.feed, got, s.want)
		}
	}
	if got := p.close(); len(got) != 0 {
		t.Errorf("close = %v, want nothing", describeChunks(got))
	}
	if got := p.feed("more"); got != nil {
		t.Errorf("feed after close = %v", describeChunks(got))
	}
}

// TestParserTextChunksAreValidUTF8: however the input is split, text
// chunks hold whole characters.
func TestParserTextChunksAreValidUTF8(t *testing.T) {
	for _, c := range parseAll(testTools, bytePieces(splitResponse)...) {
		if c.Kind == model.KindText && !utf8.ValidString(c.Text) {
			t.Errorf("text chunk %q is not valid UTF-8", c.Text)
		}
	}
}

func TestParserWithoutTools(t *testing.T) {
	in := "<read_file><path>a</path></read_file><foo_bar><x>1</x></foo_bar>"
	if got, want := describeChunks(parseAll(nil, in)), lines(in); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParserIDPrefix(t *testing.T) {
	p := newParser(testTools, withIDPrefix("c"))
	got := describeChunks(append(p.feed("<list_files></list_files><list_files></list_files>"), p.close()...))
	want := lines(call("c1", "list_files", "{}"), call("c2", "list_files", "{}"))
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestParserLongInputIsLinear: inputs built to make a parser read bytes
// again and again (would-be calls in would-be calls, tags followed by
// prose, many parameters), fed in small pieces, take time in proportion
// to their size: a quadratic parser takes minutes on them.
func TestParserLongInputIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 1 << 18
	var distinct strings.Builder
	distinct.WriteString("<read_file>")
	for i := range n / 12 {
		fmt.Fprintf(&distinct, "<p%d></p%d>", i, i)
	}
	distinct.WriteString("</read_file>")
	inputs := map[string]string{
		"nested unknown tags":          strings.Repeat("<a_b>", n/5),
		"nested unknown calls":         strings.Repeat("<a_b><c>", n/8),
		"nested unknown calls, closed": strings.Repeat("<a_b><c_d>", n/20) + strings.Repeat("</c_d>", n/20) + " x",
		"unknown calls, then prose":    strings.Repeat("<a_b><c>1</c>", n/13) + " x",
		"wrappers of known tags":       strings.Repeat("<a_b><c><read_file>", n/38) + strings.Repeat("</c></a_b>", n/38),
		"tool tags in one line":        strings.Repeat("<read_file>x<write_file>y", n/25),
		"tool tags then blanks":        "<read_file>" + strings.Repeat(" \n", n/2),
		"partial tags":                 strings.Repeat("<read_fil", n/9),
		"partial closing tags":         "<read_file><path>" + strings.Repeat("</pat", n/5),
		"many parameters":              distinct.String(),
		"big value and text": "<write_file><path>a</path><content>" + strings.Repeat("x < y </conten ", n/15) +
			"</content></write_file>" + strings.Repeat("x < y </conten ", n/15),
	}
	for name, in := range inputs {
		start := time.Now()
		p := newParser(testTools)
		for i := 0; i < len(in); i += 7 {
			p.feed(in[i:min(i+7, len(in))])
		}
		p.close()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %d bytes took %v", name, len(in), d)
		}
	}
}

func TestRenderCallRoundTrip(t *testing.T) {
	for _, args := range []string{
		`{}`,
		`{"path":"a"}`,
		`{"path":"a","content":"line 1\nline 2"}`,
		`{"content":"\nstarts and ends with a break\n"}`,
		`{"content":"\r\nwindows\r\n"}`,
		`{"content":"x\ny\r"}`,
		`{"content":"\n"}`,
		`{"content":"a < b"}`,
		`{"content":""}`,
		`{"count":3,"verbose":true,"tags":["a","b"],"meta":{"k":1}}`,
	} {
		c := pipeline.ToolCall{ID: "c1", Name: "set_flags", Arguments: json.RawMessage(args)}
		xml := renderCall(c)
		calls := assembleCalls(parseAll([]pipeline.Tool{tool("set_flags", `{"type":"object","properties":{"count":{"type":"integer"},"verbose":{"type":"boolean"},"tags":{"type":"array"},"meta":{"type":"object"}}}`)}, xml))
		if len(calls) != 1 || string(calls[0].Arguments) != args {
			t.Errorf("renderCall(%s) = %q, which parses to %+v", args, xml, calls)
		}
	}
	// Malformed calls are shown as the model wrote them.
	raw := "<read_file><path>a"
	if got := renderCall(pipeline.ToolCall{Name: "read_file", Arguments: json.RawMessage(raw)}); got != raw {
		t.Errorf("renderCall(malformed) = %q, want %q", got, raw)
	}
	// Arguments that are not an object go between the tags.
	if got, want := renderCall(pipeline.ToolCall{Name: "x", Arguments: json.RawMessage(`{"a": `)}), "<x>\n{\"a\":\n</x>"; got != want {
		t.Errorf("renderCall(broken JSON) = %q, want %q", got, want)
	}
}

func TestDiagnoseWellFormed(t *testing.T) {
	for _, c := range []pipeline.ToolCall{
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)},
		{Name: "read_file", Arguments: json.RawMessage(`<write_file>`)},
		{Name: "read_file", Arguments: nil},
	} {
		if why, ok := diagnose(c); ok {
			t.Errorf("diagnose(%s) = %q, want none", c.Arguments, why)
		}
	}
}

// TestFormerExamples keeps the two cases the package's examples showed when
// the parser and diagnose were exported: prose tags and a typed value around
// a call split anywhere, and a call cut off before its closing tags.
func TestFormerExamples(t *testing.T) {
	readFile := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "read_file",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}}}`)}}
	got := describeChunks(parseAll([]pipeline.Tool{readFile}, "Is <b>a < b</b>? <rea", "d_file>\n<path>main.go</path>\n<li", "ne>12</line>\n</read_file>"))
	want := []string{
		`text "Is <b>a < b</b>? "`,
		"start xml_call_1 read_file",
		`delta xml_call_1 {"path":"main.go","line":12}`,
		"end xml_call_1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("chunks\n got %q\nwant %q", got, want)
	}
	why, malformed := diagnose(pipeline.ToolCall{ID: "xml_call_1", Name: "read_file", Arguments: json.RawMessage("<read_file>\n<path>main.go")})
	if want := "the <path> parameter was never closed with </path>, so the rest of your answer was taken as its value"; !malformed || why != want {
		t.Errorf("diagnose = %q, %v; want %q, true", why, malformed, want)
	}
}
