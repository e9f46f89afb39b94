package xmltools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/xmltools"
)

// textModel answers step k of every turn with steps[k-1], streamed in
// pieces of 5 bytes, and remembers the history each request showed it.
type textModel struct {
	steps []string
	mu    sync.Mutex
	seen  [][]pipeline.Message
	sys   []string
}

func (m *textModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	if len(req.Tools) > 0 {
		return nil, fmt.Errorf("the model got %d native tools", len(req.Tools))
	}
	msgs := make([]pipeline.Message, req.Messages.Len())
	for i := range msgs {
		msgs[i] = req.Messages.At(i)
	}
	m.mu.Lock()
	m.seen = append(m.seen, msgs)
	m.sys = append(m.sys, req.System)
	m.mu.Unlock()
	text := m.steps[min(req.Step, len(m.steps))-1]
	var chunks []model.Chunk
	for i := 0; i < len(text); i += 5 {
		chunks = append(chunks, model.Chunk{Kind: model.KindText, Text: text[i:min(i+5, len(text))]})
	}
	return &chunkStream{chunks: chunks}, nil
}

type chunkStream struct{ chunks []model.Chunk }

func (s *chunkStream) Recv() (model.Chunk, error) {
	if len(s.chunks) == 0 {
		return model.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *chunkStream) Close() error { return nil }

// TestWrapInRuntime runs a turn of a text-only model through the runtime:
// a good call runs, a cut-off call and a call of an unknown tool come back
// to the model as errors it can read, in the protocol's words.
func TestWrapInRuntime(t *testing.T) {
	readFile := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "read_note", Description: "Reads a file.", Category: pipeline.CategoryRead,
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			var a struct {
				Path string `json:"path"`
				Line int    `json:"line"`
			}
			if err := json.Unmarshal(c.Arguments(), &a); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{Content: fmt.Sprintf("line %d of %s: if a < b {", a.Line, a.Path)}, nil
		},
	}
	m := &textModel{steps: []string{
		"I will read it.\n<read_note>\n<path>notes.txt</path>\n<line>3</line>\n</read_note>",
		"Now the other one.\n<read_note>\n<path>other.txt",
		"<attempt_completion>\n<result>done</result>\n</attempt_completion>",
		"The line is `if a < b {`.",
	}}
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("agents:\n  - name: a\n    tools: [read_note]\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(),
		runtime.WithTool(readFile), runtime.WithModel(xmltools.Wrap(m)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("What is line 3 of notes.txt?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "The line is `if a < b {`." || res.Steps != 4 {
		t.Errorf("result = %+v", res)
	}

	// What the runtime stored: native calls and results.
	hist, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user: What is line 3 of notes.txt?",
		`assistant: I will read it.` + "\n" + ` +call(xml_call_1_1_1 read_note {"path":"notes.txt","line":3})`,
		"tool(xml_call_1_1_1 read_note): line 3 of notes.txt: if a < b {",
		"assistant: Now the other one.\n +call(xml_call_1_2_1 read_note <read_note>\n<path>other.txt)",
		`tool!(xml_call_1_2_1 read_note): tool "read_note": arguments are not valid JSON: invalid character '<' looking for beginning of value`,
		`assistant: +call(xml_call_1_3_1 attempt_completion {"result":"done"})`,
		`tool!(xml_call_1_3_1 attempt_completion): unknown tool "attempt_completion"; the tools offered are: read_note`,
		"assistant: The line is `if a < b {`.",
	}
	if got := describe(hist); !slices.Equal(got, want) {
		t.Errorf("history:\n got %q\nwant %q", got, want)
	}

	// What the model saw at the last step: its own XML and the results.
	seen := describe(m.seen[3])
	wantSeen := []string{
		"user: What is line 3 of notes.txt?",
		"assistant: I will read it.\n<read_note>\n<path>notes.txt</path>\n<line>3</line>\n</read_note>",
		"user: [read_note result]\nline 3 of notes.txt: if a < b {",
		"assistant: Now the other one.\n<read_note>\n<path>other.txt",
		"user: [read_note error]\nYour <read_note> call was not run: the <path> parameter was never closed with </path>, so the rest of your answer was taken as its value. Write the whole call again.",
		"assistant: <attempt_completion>\n<result>done</result>\n</attempt_completion>",
		`user: [attempt_completion error]` + "\n" + `unknown tool "attempt_completion"; the tools offered are: read_note`,
	}
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("the model saw:\n got %q\nwant %q", seen, wantSeen)
	}
	if !strings.Contains(m.sys[0], "## read_note\nReads a file.\nParameters:\n- path (string, required)\n- line (integer, optional)\n") {
		t.Errorf("system prompt:\n%s", m.sys[0])
	}
}

func describe(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var b strings.Builder
		if m.Role == pipeline.RoleTool {
			b.WriteString("tool")
			if m.IsError {
				b.WriteString("!")
			}
			fmt.Fprintf(&b, "(%s %s):", m.ToolCallID, m.Name)
		} else {
			b.WriteString(string(m.Role) + ":")
		}
		if m.Content != "" {
			b.WriteString(" " + m.Content)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " +call(%s %s %s)", c.ID, c.Name, c.Arguments)
		}
		out[i] = b.String()
	}
	return out
}
