package cassette

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// fakeModel answers every call with its chunks.
type fakeModel struct{ chunks []model.Chunk }

func (f fakeModel) Stream(context.Context, *model.Request) (model.Stream, error) {
	return &fakeStream{chunks: f.chunks}, nil
}

type fakeStream struct {
	chunks []model.Chunk
	n      int
}

func (s *fakeStream) Recv() (model.Chunk, error) {
	if s.n == len(s.chunks) {
		return model.Chunk{}, io.EOF
	}
	s.n++
	return s.chunks[s.n-1], nil
}

func (s *fakeStream) Close() error { return nil }

func drain(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

func request(turn string, step int, msgs ...string) *model.Request {
	var ms pipeline.MessageSlice
	for i, m := range msgs {
		role := pipeline.RoleUser
		if i%2 == 1 {
			role = pipeline.RoleAssistant
		}
		ms = append(ms, pipeline.Message{Role: role, Content: m})
	}
	return &model.Request{Agent: "a", InstanceKey: "k", TurnID: turn, Step: step, Model: "m1", System: "sys", Messages: ms,
		Tools: []pipeline.Tool{{ToolSpec: pipeline.ToolSpec{Name: "read_file", Parameters: []byte(`{ "type": "object" }`)}}}}
}

// TestRecordedSessionPlaysBack drives a recorder as the runtime does,
// reads what it wrote, and plays it back.
func TestRecordedSessionPlaysBack(t *testing.T) {
	const secretValue = "sk-provided-7c2e9a41b5d3"
	var buf bytes.Buffer
	rec := NewRecorder(&buf)
	rt := rec.tape()
	answer := []model.Chunk{{Kind: model.KindText, Text: "Hel"}, {Kind: model.KindText, Text: "lo"},
		{Kind: model.KindToolCallStart, ToolCallID: "c1", ToolName: "read_file"}, {Kind: model.KindToolCallDelta, ToolCallID: "c1", ArgumentsDelta: `{"path":"x"}`},
		{Kind: model.KindToolCallEnd, ToolCallID: "c1"}, {Kind: model.KindUsage, Usage: pipeline.Usage{InputTokens: 7, OutputTokens: 3}}}
	p, err := rt.Provider("", func() (model.Provider, error) { return fakeModel{answer}, nil })
	if err != nil {
		t.Fatal(err)
	}
	clock := rt.Clock(func() time.Time { return time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC) })
	t0 := clock()
	rt.Input(tape.Input{Op: "send", Agent: "a", Instance: "k", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"}})
	s, err := p.Stream(t.Context(), request("turn-1", 1, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, s)
	s.Close()
	if id := rt.ID("task/a/k/turn-1/c1", func() string { return "task_abc" }); id != "task_abc" {
		t.Errorf("recording: id %q, want the fresh one", id)
	}
	res, err := rt.Tool(t.Context(), tape.Call{Agent: "a", Instance: "k", TurnID: "turn-1", Step: 1,
		Call: pipeline.ToolCall{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"x"}`)},
		Run: func(context.Context) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "file text"}, nil
		}})
	if err != nil || res.Content != "file text" {
		t.Fatalf("tool: %v %v", res, err)
	}
	rt.Input(tape.Input{Op: "provide", ID: "p-1", Text: secretValue, Secret: true})
	rt.Event(events.Event{Topic: events.TurnFinished, Agent: "a", Instance: "k", Source: "runtime", Data: map[string]string{"echo": secretValue}})
	rt.Event(events.Event{Topic: events.ModelDelta, Agent: "a", Data: "left out"})
	s, err = p.Stream(t.Context(), request("turn-1", 2, "hi", "Hello", "file text"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if strings.Contains(text, secretValue) {
		t.Fatalf("the cassette holds the secret:\n%s", text)
	}
	for _, want := range []string{
		`{"k":"input","op":"provide","id":"p-1","text":"[secret]","secret":true}`,
		`"data":{"echo":"[secret provided 1]"}`,
		`"same":1,"messages":[{"role":"assistant","content":"Hello"},{"role":"user","content":"file text"}]}`, // the second call: only what is new
		`{"k":"chunk","call":1,"ms":`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the cassette lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "left out") {
		t.Errorf("a model delta event was recorded:\n%s", text)
	}
	if n := strings.Count(text, `"tools":`); n != 1 {
		t.Errorf("the catalog is written %d times, want once (it did not change):\n%s", n, text)
	}

	c, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Inputs()) != 2 || c.Inputs()[0].Input.Text != "hi" {
		t.Errorf("inputs: %+v", c.Inputs())
	}
	pl := NewPlayer(c).tape()
	pp, err := pl.Provider("", func() (model.Provider, error) { t.Fatal("a player opened the provider"); return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if now := pl.Clock(time.Now)(); !now.Equal(t0) {
		t.Errorf("clock: %v, want the recorded %v", now, t0)
	}
	s, err = pp.Stream(t.Context(), request("turn-1", 1, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if replayed := drain(t, s); !equalChunks(replayed, got) {
		t.Errorf("replayed chunks %+v, want %+v", replayed, got)
	}
	if id := pl.ID("task/a/k/turn-1/c1", func() string { return "fresh" }); id != "task_abc" {
		t.Errorf("id %q, want the recorded task_abc", id)
	}
	ran := false
	res, err = pl.Tool(t.Context(), tape.Call{Agent: "a", Instance: "k", TurnID: "turn-1", Step: 1,
		Call: pipeline.ToolCall{ID: "c1", Name: "read_file", Arguments: []byte(`{ "path": "x" }`)},
		Run:  func(context.Context) (*pipeline.ToolResult, error) { ran = true; return nil, nil }})
	if err != nil || res.Content != "file text" || ran {
		t.Errorf("doubled tool: %+v %v, ran %v; want the recorded result without running", res, err, ran)
	}
	// The second call's request differs in its last message.
	_, err = pp.Stream(t.Context(), request("turn-1", 2, "hi", "Hello", "other text"))
	var d *Divergence
	if !errors.As(err, &d) {
		t.Fatalf("err %v, want a divergence", err)
	}
	want := `replay diverged at model call 2 (agent "a" instance "k" turn-1 step 2):
  messages[2].content: recorded "file text", now "other text"`
	if d.Error() != want {
		t.Errorf("divergence:\n%s\nwant:\n%s", d, want)
	}
}

func equalChunks(a, b []model.Chunk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Text != b[i].Text || a[i].ToolCallID != b[i].ToolCallID || a[i].ToolName != b[i].ToolName ||
			a[i].ArgumentsDelta != b[i].ArgumentsDelta || a[i].Usage != b[i].Usage {
			return false
		}
	}
	return true
}

func TestReadRefusesWhatIsNoCassette(t *testing.T) {
	const head = `{"k":"cassette","version":1,"start":"2026-11-27T10:00:00Z"}` + "\n"
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "1: not a cassette: empty"},
		{"no header", `{"k":"input","op":"send"}`, `1: not a cassette: the first line must be the header {"k":"cassette",...}, found "input"`},
		{"not JSON", "hello\n", "1: not a JSON object: invalid character 'h' looking for beginning of value"},
		{"later version", `{"k":"cassette","version":2,"start":"2026-11-27T10:00:00Z"}`, "1: cassette version 2; this build reads versions 1 to 1"},
		{"no start", `{"k":"cassette","version":1}`, "1: header: no start time"},
		{"unknown kind", head + `{"k":"tape"}`, `2: tape line: unknown kind "tape" (want input, model, chunk, tool, id, clock, event or mcp_tools)`},
		{"unknown field", head + `{"k":"tool","agent":"a","colour":"red"}`, `2: tool line: json: unknown field "colour"`},
		{"unknown op", head + `{"k":"input","op":"shout"}`, `2: input line: unknown op "shout" (want send, ask, answer, edit, skip, provide or reject)`},
		{"send without input", head + `{"k":"input","op":"send","agent":"a"}`, "2: input line: a send needs agent and input"},
		{"answer without id", head + `{"k":"input","op":"answer","text":"yes"}`, "2: input line: an answer needs the pending item's id"},
		{"orphan chunk", head + `{"k":"chunk","call":4,"ms":0,"kind":"text"}`, "2: chunk line: chunk of call 4, which no model line before it opened"},
		{"bad chunk kind", head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":1,"messages":[]}` + "\n" + `{"k":"chunk","call":1,"ms":0,"kind":"shout"}`, `3: chunk line: unknown chunk kind "shout"`},
		{"call again", head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":1,"messages":[]}` + "\n" + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":2,"messages":[]}`, "3: model line: call number 1 is not new"},
		{"same too far", head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":1,"messages":[]}` + "\n" + `{"k":"model","call":2,"agent":"a","instance":"k","turn_id":"t","step":2,"same":3,"messages":[]}`, "3: model line: same: 3, but the call before for this conversation had 0 messages"},
		{"same first", head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":1,"same":1,"messages":[]}`, `2: model line: same: 1, but it is the first call for model "" of agent "a" instance "k"`},
		{"id without key", head + `{"k":"id","key":"","id":"x"}`, "2: id line: an id needs a key and an id"},
		{"second header", head + head, "2: cassette line: a second header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.text))
			if err == nil || err.Error() != tt.want {
				t.Errorf("err %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestFieldDiffShowsWhereLongValuesDiffer(t *testing.T) {
	long := strings.Repeat("word ", 40)
	tests := []struct {
		name, was, now, want string
	}{
		{"short", "a", "b", `f: recorded "a", now "b"`},
		{"empty", "", "b", `f: recorded "", now "b"`},
		{"long", long + "end", long + "END", `f (differs at byte 200): recorded …"word word word word word word word word end", now …"word word word word word word word word END"`},
		{"utf-8", strings.Repeat("é", 60) + "x", strings.Repeat("é", 60) + "y", `f (differs at byte 120): recorded …"ééééééééééééééééééééx", now …"ééééééééééééééééééééy"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldDiff("f", tt.was, tt.now)[0]; got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestScriptKeepsTurnNumbersAndNamesWhatItLeavesOut(t *testing.T) {
	const text = `{"k":"cassette","version":1,"start":"2026-11-27T10:00:00Z"}
{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"turn-1","step":1,"messages":[]}
{"k":"chunk","call":1,"ms":0,"kind":"text","text":"one {{ .Input }}"}
{"k":"model","call":2,"agent":"a","instance":"k","turn_id":"turn-3","step":1,"messages":[]}
{"k":"chunk","call":2,"ms":0,"kind":"reasoning","text":"hm"}
{"k":"chunk","call":2,"ms":0,"kind":"error","error":{"kind":"rate limited","message":"slow down"}}
{"k":"model","call":3,"agent":"a","instance":"other","turn_id":"turn-1","step":1,"messages":[]}
{"k":"model","call":4,"model":"condense.model","agent":"a","instance":"k","turn_id":"turn-3","step":1,"messages":[]}
{"k":"model","call":5,"agent":"a","instance":"k","turn_id":"turn-4","step":1,"messages":[]}
`
	c, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := `# The scripted model's answers, from a recorded session.
# Left out: agent "a" instance "other" turn-1 step 1 (the script holds instance "k").
# Left out: the call of model "condense.model" of agent "a" turn-3 step 1.
agents:
  a:
    turns:
    - steps:
      - text: one {{"{{"}} .Input }}
    - steps:
      - text: (turn 2 did not reach the model)
    - steps:
      - reasoning: hm
        error: slow down
    - steps:
      - usage:
          input_tokens: 0
          output_tokens: 0
`
	if got := string(c.Script()); got != want {
		t.Errorf("script:\n%s\nwant:\n%s", got, want)
	}
}
