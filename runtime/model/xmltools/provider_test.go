package xmltools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// fakeProvider streams canned chunks and remembers what each request
// showed the model.
type fakeProvider struct {
	mu        sync.Mutex
	responses [][]model.Chunk // by request, in turn; the last repeats
	err       error           // returned by Stream when set
	seen      []seenRequest
}

type seenRequest struct {
	system   string
	tools    int
	messages []pipeline.Message
}

func (f *fakeProvider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	s := seenRequest{system: req.System, tools: len(req.Tools)}
	if req.Messages != nil {
		for i := range req.Messages.Len() {
			s.messages = append(s.messages, req.Messages.At(i))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, s)
	if f.err != nil {
		return nil, f.err
	}
	n := min(len(f.seen), len(f.responses)) - 1
	return &sliceStream{chunks: slices.Clone(f.responses[n])}, nil
}

type sliceStream struct {
	chunks []model.Chunk
	closed bool
}

func (s *sliceStream) Recv() (model.Chunk, error) {
	if len(s.chunks) == 0 {
		return model.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *sliceStream) Close() error { s.closed = true; return nil }

// drain reads a stream to its end.
func drain(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		out = append(out, c)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out
}

func textChunks(parts ...string) []model.Chunk {
	out := make([]model.Chunk, len(parts))
	for i, p := range parts {
		out[i] = model.Chunk{Kind: model.KindText, Text: p}
	}
	return out
}

var promptTools = []pipeline.Tool{
	{ToolSpec: pipeline.ToolSpec{Name: "read_file", Description: "Reads a file of the workspace.", Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "description": "The file's path,\nrelative to the workspace."},
			"offset": {"type": "integer", "description": "The first line."},
			"mode": {"type": "string", "enum": ["text", "hex"]},
			"tags": {"type": "array", "items": {"type": "string"}}
		},
		"required": ["path"]
	}`)}},
	{ToolSpec: pipeline.ToolSpec{Name: "list_files", Description: "Lists the files.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
	{ToolSpec: pipeline.ToolSpec{Name: "anything", Description: "Takes anything."}},
}

func TestToolPrompt(t *testing.T) {
	got := toolPrompt(promptTools)
	for _, want := range []string{
		"<tool_name>\n<parameter_name>value</parameter_name>\n",
		"## read_file\nReads a file of the workspace.\nParameters:\n" +
			"- path (string, required): The file's path, relative to the workspace.\n" +
			"- offset (integer, optional): The first line.\n" +
			"- mode (string, one of: text, hex, optional)\n" +
			"- tags (array of string, as JSON, optional)\n" +
			"Usage:\n<read_file>\n<path>path here</path>\n</read_file>\n",
		"## list_files\nLists the files.\nParameters: none.\nUsage:\n<list_files>\n</list_files>\n",
		"## anything\nTakes anything.\nParameters: any, each as <name>value</name>.\nUsage:\n<anything>\n</anything>",
		`"[tool_name result]"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("toolPrompt lacks %q; it is:\n%s", want, got)
		}
	}
}

// history for TestWrap: a call, its results, a malformed call and its
// error, the new question.
func wrapHistory() pipeline.MessageSlice {
	return pipeline.MessageSlice{
		{ID: "m1", Role: pipeline.RoleUser, Content: "Copy a.txt to b.txt."},
		{ID: "m2", Role: pipeline.RoleAssistant, Content: "Let me look.", Reasoning: "easy", ToolCalls: []pipeline.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt","offset":2}`)},
			{ID: "c2", Name: "write_file", Arguments: json.RawMessage(`{"path":"b.txt","content":"x\ny"}`)},
		}},
		{ID: "m3", Role: pipeline.RoleTool, ToolCallID: "c1", Name: "read_file", Content: "x\ny"},
		{ID: "m4", Role: pipeline.RoleTool, ToolCallID: "c2", Name: "write_file", Content: `tool "write_file" failed: permission denied`, IsError: true},
		{ID: "m5", Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{
			{ID: "c3", Name: "read_file", Arguments: json.RawMessage("<read_file>\n<path>b.txt")},
		}},
		{ID: "m6", Role: pipeline.RoleTool, ToolCallID: "c3", Name: "read_file", IsError: true,
			Content: `tool "read_file": arguments are not valid JSON: invalid character '<' looking for beginning of value`},
		{ID: "m7", Role: pipeline.RoleTool, ToolCallID: "c9", Name: "read_file", Content: ""},
		{ID: "m8", Role: pipeline.RoleSystem, Content: "Be brief."},
	}
}

var wrapHistoryWant = []string{
	"m1 user: Copy a.txt to b.txt.",
	"m2 assistant: Let me look.\n<read_file>\n<path>a.txt</path>\n<offset>2</offset>\n</read_file>\n<write_file>\n<path>b.txt</path>\n<content>\nx\ny\n</content>\n</write_file>",
	"m3 user: [read_file result]\nx\ny",
	"m4 user: [write_file error]\ntool \"write_file\" failed: permission denied",
	"m5 assistant: <read_file>\n<path>b.txt",
	"m6 user: [read_file error]\nYour <read_file> call was not run: the <path> parameter was never closed with </path>, so the rest of your answer was taken as its value. Write the whole call again.",
	"m7 user: [read_file result]\n(no output)",
	"m8 system: Be brief.",
}

func describeMessages(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID + " " + string(m.Role) + ": " + m.Content
		if len(m.ToolCalls) > 0 || m.ToolCallID != "" || m.Name != "" || m.IsError {
			out[i] += " (tool fields left)"
		}
	}
	return out
}

func TestWrap(t *testing.T) {
	tools := append(slices.Clone(promptTools), tool("write_file", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`))
	inner := &fakeProvider{responses: [][]model.Chunk{{
		{Kind: model.KindReasoning, Text: "I should read it."},
		{Kind: model.KindText, Text: "Reading <rea"},
		{Kind: model.KindText, Text: "d_file>\n<path>c.txt</pa"},
		{Kind: model.KindUsage, Usage: pipeline.Usage{InputTokens: 10, OutputTokens: 5}},
		{Kind: model.KindText, Text: "th>\n<offset>7</offset>\n</read_file>"},
		{Kind: model.KindText, Text: "\n<read_file>"},
	}}}
	req := &model.Request{Agent: "a", Turn: 3, Step: 2, System: "You are helpful.\n", Messages: wrapHistory(), Tools: tools}
	s, err := Wrap(inner).Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, s)

	seen := inner.seen[0]
	if seen.tools != 0 {
		t.Errorf("the inner provider got %d tools, want none", seen.tools)
	}
	if !strings.HasPrefix(seen.system, "You are helpful.\n\n# Tools\n") || !strings.Contains(seen.system, "## read_file\nReads a file of the workspace.\n") ||
		!strings.HasSuffix(seen.system, "<write_file>\n<path>path here</path>\n<content>content here</content>\n</write_file>") {
		t.Errorf("system prompt:\n%s", seen.system)
	}
	if len(req.Tools) != len(tools) || req.System != "You are helpful.\n" {
		t.Errorf("Wrap changed the caller's request: %+v", req)
	}
	if got := describeMessages(seen.messages); !slices.Equal(got, wrapHistoryWant) {
		t.Errorf("history:\n got %q\nwant %q", got, wrapHistoryWant)
	}
	if seen.messages[1].Reasoning != "easy" {
		t.Errorf("the assistant message lost its reasoning: %+v", seen.messages[1])
	}

	want := []string{
		"reasoning",
		`text "Reading "`,
		"start xml_call_3_2_1 read_file",
		"usage",
		`delta xml_call_3_2_1 {"path":"c.txt","offset":7}`,
		"end xml_call_3_2_1",
		`text "\n"`,
		"start xml_call_3_2_2 read_file",
		"delta xml_call_3_2_2 <read_file>",
		"end xml_call_3_2_2",
	}
	if d := describeChunks(got); !slices.Equal(d, want) {
		t.Errorf("chunks:\n got %q\nwant %q", d, want)
	}
}

func TestWrapInnerError(t *testing.T) {
	boom := errors.New("boom")
	inner := &fakeProvider{responses: [][]model.Chunk{{
		{Kind: model.KindText, Text: "Partial <read_"},
		{Kind: model.KindError, Err: boom},
	}}}
	s, err := Wrap(inner).Stream(context.Background(), &model.Request{Tools: promptTools})
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, s)
	if d := describeChunks(got); !slices.Equal(d, []string{`text "Partial <read_"`, "error"}) || got[len(got)-1].Err != boom {
		t.Errorf("chunks = %q", d)
	}
	// Recv after the end keeps saying so.
	if _, err := s.Recv(); err != io.EOF {
		t.Errorf("Recv after the end: %v", err)
	}

	inner = &fakeProvider{err: boom}
	if _, err := Wrap(inner).Stream(context.Background(), &model.Request{Tools: promptTools}); err != boom {
		t.Errorf("Stream = %v, want %v", err, boom)
	}
}

// brokenStream fails after its chunks.
type brokenStream struct {
	sliceStream
	err error
}

func (s *brokenStream) Recv() (model.Chunk, error) {
	if len(s.chunks) == 0 {
		return model.Chunk{}, s.err
	}
	return s.sliceStream.Recv()
}

func TestWrapBrokenStream(t *testing.T) {
	boom := errors.New("connection reset")
	st := &stream{inner: &brokenStream{sliceStream{chunks: textChunks("a <read_file><path>x</path>")}, boom}, parser: newParser(promptTools)}
	var kinds []string
	for {
		c, err := st.Recv()
		if err != nil {
			if err != boom {
				t.Errorf("Recv = %v, want %v", err, boom)
			}
			break
		}
		kinds = append(kinds, c.Kind.String())
	}
	// The text and the cut-off call come out before the failure.
	if want := []string{"text", "tool_call_start", "tool_call_delta", "tool_call_end"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds = %q, want %q", kinds, want)
	}
}

func TestWrapWithoutTools(t *testing.T) {
	inner := &fakeProvider{responses: [][]model.Chunk{textChunks("<read_file><path>a</path></read_file>")}}
	s, err := Wrap(inner).Stream(context.Background(), &model.Request{System: "sys", Messages: wrapHistory()})
	if err != nil {
		t.Fatal(err)
	}
	if d := describeChunks(drain(t, s)); !slices.Equal(d, []string{`text "<read_file><path>a</path></read_file>"`}) {
		t.Errorf("chunks = %q", d)
	}
	seen := inner.seen[0]
	if seen.system != "sys" {
		t.Errorf("system = %q, want it unchanged", seen.system)
	}
	if got := describeMessages(seen.messages); !slices.Equal(got, wrapHistoryWant) {
		t.Errorf("history:\n got %q\nwant %q", got, wrapHistoryWant)
	}
}

// countingList counts the reads of a message list.
type countingList struct {
	pipeline.MessageSlice
	reads int
}

func (l *countingList) At(i int) pipeline.Message { l.reads++; return l.MessageSlice.At(i) }

// TestHistoryIsLazy: the view reads a message when it is read, and, for a
// failed call's result, the messages back to the call.
func TestHistoryIsLazy(t *testing.T) {
	l := &countingList{MessageSlice: wrapHistory()}
	h := history{l}
	if h.Len() != len(l.MessageSlice) || l.reads != 0 {
		t.Fatalf("Len = %d with %d reads", h.Len(), l.reads)
	}
	h.At(2)
	if l.reads != 1 {
		t.Errorf("At(2) read %d messages, want 1", l.reads)
	}
	l.reads = 0
	h.At(5) // a failed call's result: back to the assistant message 4
	if l.reads != 2 {
		t.Errorf("At(5) read %d messages, want 2", l.reads)
	}
}
