//go:build !wasip1

package ganglion

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeHost is module ganglion in memory: fields per handle, and a record
// of what the guest did. Its byte-returning imports follow the ABI's
// buffer rule: the full length, written only if it fits.
type fakeHost struct {
	fields   map[int32][]byte // field ID → value, for every handle
	codes    map[string]int32 // import → the error code it returns
	messages [][]byte
	state    []byte
	lastErr  string

	bufLens     []int // the buffer sizes field was called with
	gotManifest string
	regs        []string // "kind spec"
	set         map[int32]string
	guestErr    string
	logs        []string
	nextRuns    int
	onNext      func(h int32) int32 // when set, next runs it (nested hooks) instead
	agentReqs   []string
	windowJSON  []byte     // the window import's answer
	answers     []string   // window_apply and complete answers, in turn
	hostReqs    []string   // "import request", each call
	box         *[3]uint64 // the inbox the guest registered
	running     [3]uint64  // what the host keeps in the inbox for the running hook
}

func newFake() *fakeHost {
	return &fakeHost{fields: map[int32][]byte{}, codes: map[string]int32{}, set: map[int32]string{}}
}

// use makes f the host for the test, with no extension registered.
func (f *fakeHost) use(t *testing.T) *fakeHost {
	t.Helper()
	old := host
	host, ext.manifest, ext.setup, ext.hooks = f, nil, nil, nil
	buf = make([]byte, initialBuf)
	inbox, inboxOn, inboxed = [3]uint64{}, false, [2]struct {
		gen  uint64
		text string
	}{}
	t.Cleanup(func() { host, ext.manifest, ext.setup, ext.hooks = old, nil, nil, nil })
	return f
}

func (f *fakeHost) fail(op string) (int32, bool) {
	if c, ok := f.codes[op]; ok {
		f.lastErr = op + " refused by the fake"
		return c, true
	}
	return 0, false
}

func give(dst, v []byte) int32 {
	if len(v) <= len(dst) {
		copy(dst, v)
	}
	return int32(len(v))
}

func (f *fakeHost) manifest(b []byte) int32 {
	if c, ok := f.fail("manifest"); ok {
		return c
	}
	f.gotManifest = string(b)
	return 0
}

func (f *fakeHost) register(kind int32, spec []byte) int32 {
	if c, ok := f.fail("register"); ok {
		return c
	}
	f.regs = append(f.regs, kindName(kind)+" "+string(spec))
	return int32(len(f.regs))
}

func (f *fakeHost) field(h, field int32, b []byte) int32 {
	f.bufLens = append(f.bufLens, len(b))
	if c, ok := f.fail(fieldOp(field)); ok {
		return c
	}
	if v, ok := f.set[field]; ok {
		return give(b, []byte(v))
	}
	v, ok := f.fields[field]
	if !ok {
		f.lastErr = "no such field"
		return int32(CodeInvalid)
	}
	return give(b, v)
}

func (f *fakeHost) setField(h, field int32, v []byte) int32 {
	if c, ok := f.fail("set_field"); ok {
		return c
	}
	f.set[field] = string(v)
	return 0
}

func (f *fakeHost) messagesLen(int32) int32 { return int32(len(f.messages)) }

func (f *fakeHost) message(h, i int32, b []byte) int32 {
	if i < 0 {
		i += int32(len(f.messages))
	}
	if i < 0 || int(i) >= len(f.messages) {
		f.lastErr = fmt.Sprintf("message %d: the conversation has %d", i, len(f.messages))
		return int32(CodeNotFound)
	}
	return give(b, f.messages[i])
}

func (f *fakeHost) emit(int32, []byte) int32 { return 0 }

func (f *fakeHost) next(h int32) int32 {
	f.nextRuns++
	if f.onNext != nil {
		return f.onNext(h)
	}
	if c, ok := f.fail("next"); ok {
		return c
	}
	return 0
}

func (f *fakeHost) stateGet(h int32, b []byte) int32 {
	if c, ok := f.fail("state_get"); ok {
		return c
	}
	if f.state == nil {
		f.lastErr = "no state"
		return int32(CodeNotFound)
	}
	return give(b, f.state)
}

func (f *fakeHost) stateSet(h int32, v []byte) int32 {
	if c, ok := f.fail("state_set"); ok {
		return c
	}
	f.state = append([]byte(nil), v...)
	if len(v) == 0 {
		f.state = nil
	}
	return 0
}

func (f *fakeHost) publish(int32, string, []byte) int32 { return 0 }

func (f *fakeHost) log(level int32, msg string) int32 {
	f.logs = append(f.logs, fmt.Sprintf("%s %s", slog.Level(level), msg))
	return 0
}

func (f *fakeHost) secret(h int32, name string, b []byte) int32 {
	if c, ok := f.fail("secret"); ok {
		return c
	}
	return give(b, []byte("value of "+name))
}

func (f *fakeHost) setError(msg string) int32 { f.guestErr = msg; return 0 }

func (f *fakeHost) agentsRequest(h int32, req, b []byte) int32 {
	f.agentReqs = append(f.agentReqs, string(req))
	if code, failed := f.fail("agents_request"); failed {
		return code
	}
	return give(b, []byte(`{"text":"pong from the reviewer","finish_reason":"text_response"}`))
}

func (f *fakeHost) agentsSend(h int32, req []byte) int32 {
	f.agentReqs = append(f.agentReqs, string(req))
	if code, failed := f.fail("agents_send"); failed {
		return code
	}
	return 0
}

func (f *fakeHost) lastError(b []byte) int32 { return give(b, []byte(f.lastErr)) }

// inbox registers p and, as the host does for a hook that registers it,
// writes the running hook's values there at once.
func (f *fakeHost) inbox(p *[3]uint64) int32 {
	f.box = p
	*p = f.running
	return 0
}

func (f *fakeHost) window(h int32, b []byte) int32 {
	if c, ok := f.fail("window"); ok {
		return c
	}
	return give(b, f.windowJSON)
}

// act answers window_apply and complete with the next of f.answers; a call
// whose buffer is too small does not take the answer, as the host keeps it
// for the call again.
func (f *fakeHost) act(op string, req, b []byte) int32 {
	f.hostReqs = append(f.hostReqs, op+" "+string(req))
	if c, ok := f.fail(op); ok {
		return c
	}
	n := give(b, []byte(f.answers[0]))
	if int(n) <= len(b) {
		f.answers = f.answers[1:]
	}
	return n
}

func (f *fakeHost) windowApply(h int32, req, b []byte) int32 { return f.act("window_apply", req, b) }
func (f *fakeHost) complete(h int32, req, b []byte) int32    { return f.act("complete", req, b) }
func (f *fakeHost) pause(h int32, req, b []byte) int32       { return f.act("pause", req, b) }
func (f *fakeHost) httpRequest(h int32, req, b []byte) int32 { return f.act("http_request", req, b) }

func TestReadGrowsTheBuffer(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		wantLens []int
		keptBuf  int // len(buf) afterwards
	}{
		{"fits", 100, []int{initialBuf}, initialBuf},
		{"empty", 0, []int{initialBuf}, initialBuf},
		{"grows and keeps", 10_000, []int{initialBuf, 10_000}, 10_000},
		{"grows, too big to keep", 100_000, []int{initialBuf, 100_000}, initialBuf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake().use(t)
			want := strings.Repeat("x", tt.size)
			f.fields[fieldInputText] = []byte(want)
			c := &Turn{conversation: conversation{hook{1}}}
			if got := c.InputText(); got != want {
				t.Errorf("InputText() is %d bytes, want %d", len(got), len(want))
			}
			if fmt.Sprint(f.bufLens) != fmt.Sprint(tt.wantLens) {
				t.Errorf("field was called with buffers %v, want %v", f.bufLens, tt.wantLens)
			}
			if len(buf) != tt.keptBuf {
				t.Errorf("kept a buffer of %d bytes, want %d", len(buf), tt.keptBuf)
			}
		})
	}
}

func TestValuesAreTheCallers(t *testing.T) {
	f := newFake().use(t)
	f.fields[fieldToolArgs] = []byte(`{"a":1}`)
	f.fields[fieldToolName] = []byte("lookup")
	c := &ToolCall{hook: hook{1}}
	args := c.Args()
	_ = c.Name() // reuses the shared buffer
	if string(args) != `{"a":1}` {
		t.Errorf("Args() changed to %q after another read", args)
	}
}

func TestHostErrors(t *testing.T) {
	tests := []struct {
		code Code
		want error
	}{
		{CodeInvalid, ErrInvalid},
		{CodeDenied, ErrDenied},
		{CodeFailed, ErrFailed},
		{CodeBounds, ErrBounds},
		{CodeTooLarge, ErrTooLarge},
		{CodeStale, ErrStale},
		{CodePhase, ErrPhase},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			f := newFake().use(t)
			f.codes["state_get"] = int32(tt.code)
			c := &Turn{conversation: conversation{hook{1}}}
			_, err := c.State(new(any))
			if !errors.Is(err, tt.want) {
				t.Errorf("State() = %v, want it to match %v", err, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Op != "state_get" {
				t.Fatalf("State() = %#v, want an *Error of state_get with code %d", err, tt.code)
			}
			if want := "ganglion: state_get: state_get refused by the fake"; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestState(t *testing.T) {
	f := newFake().use(t)
	c := &Step{conversation: conversation{hook{1}}}
	var n struct{ Turns int }
	if found, err := c.State(&n); found || err != nil {
		t.Fatalf("State() with none = %v, %v; want false, nil", found, err)
	}
	n.Turns = 3
	if err := c.SetState(n); err != nil {
		t.Fatal(err)
	}
	n.Turns = 0
	if found, err := c.State(&n); !found || err != nil || n.Turns != 3 {
		t.Fatalf("State() = %v, %v, %+v; want true, nil, 3 turns", found, err, n)
	}
	if err := c.ClearState(); err != nil || f.state != nil {
		t.Fatalf("ClearState() = %v, left %q", err, f.state)
	}
}

func TestMessages(t *testing.T) {
	f := newFake().use(t)
	f.messages = [][]byte{
		[]byte(`{"id":"msg-1","role":"user","content":"hi","source":{"type":"user"},"created_at":"2025-01-02T03:04:05Z"}`),
		[]byte(`{"id":"msg-2","role":"assistant","tool_calls":[{"id":"c1","name":"read_file","arguments":"{\"path\":\"a\"}"}],"source":{"type":"model"},"created_at":"2025-01-02T03:04:06Z"}`),
	}
	c := &Turn{conversation: conversation{hook{1}}}
	if n := c.Messages(); n != 2 {
		t.Fatalf("Messages() = %d, want 2", n)
	}
	m, err := c.Message(-1)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg-2" || len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Arguments) != `{"path":"a"}` {
		t.Errorf("Message(-1) = %+v", m)
	}
	if _, err := c.Message(2); !errors.Is(err, ErrNotFound) {
		t.Errorf("Message(2) = %v, want ErrNotFound", err)
	}
}

func TestJSONShapes(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"guardrail's result", TurnResult{FinishReason: FinishText, Response: Message{Content: "no"}},
			`{"finish_reason":"text_response","response":{"content":"no"}}`},
		{"tool result", ToolResult{Content: "5"}, `{"content":"5","is_error":false}`},
		{"step result", StepResult{Continue: true}, `{"stop":"","continue":true}`},
		{"emit", MessageEvent{Type: MessageAppend, Message: Message{Role: RoleUser, Content: "note"}},
			`{"type":"append","message":{"role":"user","content":"note"}}`},
		{"remove", MessageEvent{Type: MessageRemove, TargetID: "msg-4"}, `{"type":"remove","target_id":"msg-4"}`},
		{"call", Call{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}, `{"id":"c1","name":"f","arguments":"{\"a\":1}"}`},
		{"input", InputEvent{Kind: InputUserMessage, Text: "hi"}, `{"kind":"user_message","text":"hi"}`},
		{"tool spec", ToolSpec{Name: "wc", Description: "Counts.", Parameters: json.RawMessage(`{"type":"object"}`), Category: CategoryRead},
			`{"name":"wc","description":"Counts.","parameters":{"type":"object"},"category":"read"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
	var c Call
	if err := json.Unmarshal([]byte(`{"id":"c1","name":"f","arguments":{"a":1}}`), &c); err != nil || string(c.Arguments) != `{"a":1}` {
		t.Errorf("Call from an object: %+v, %v", c, err)
	}
}

func TestInit(t *testing.T) {
	f := newFake().use(t)
	var turns int
	Register(Manifest{Name: "x", Version: "1.0.0", Publish: []string{"x.*"}, State: true}, func(api *API) error {
		api.Pipeline.Turn(func(t *Turn) error { turns++; return t.Next() }, Priority(-5))
		api.Pipeline.ToolCall(func(c *ToolCall) error { return c.Next() })
		api.Pipeline.Turn(func(t *Turn) error { return t.Next() })
		if err := api.Tools.Register(ToolSpec{Name: "wc", Description: "Counts."}, func(*ToolCall) (ToolResult, error) {
			return ToolResult{Content: "1"}, nil
		}); err != nil {
			return err
		}
		return api.Events.Subscribe("tool.*", func(*Event) error { return nil })
	})
	if code := runInit(); code != 0 {
		t.Fatalf("runInit() = %d: %s", code, f.guestErr)
	}
	wantManifest := `{"name":"x","version":"1.0.0","abi":2,"hooks":["turn","tool_call"],"tools":["wc"],` +
		`"topics":{"publish":["x.*"],"subscribe":["tool.*"]},"secrets":[],"state":true}`
	if f.gotManifest != wantManifest {
		t.Errorf("manifest\n got %s\nwant %s", f.gotManifest, wantManifest)
	}
	wantRegs := []string{`turn {"priority":-5}`, `tool_call {}`, `turn {}`,
		`tool {"name":"wc","description":"Counts."}`, `event {"pattern":"tool.*"}`}
	if fmt.Sprint(f.regs) != fmt.Sprint(wantRegs) {
		t.Errorf("registrations\n got %q\nwant %q", f.regs, wantRegs)
	}
	if code := runHook(kindTurn, 7, 1); code != 0 || turns != 1 || f.nextRuns != 1 {
		t.Errorf("turn hook 1 = %d, ran %d times, next %d times", code, turns, f.nextRuns)
	}
	if code := runHook(kindStep, 7, 1); code != 1 || f.guestErr != "ganglion: no step hook with id 1" {
		t.Errorf("a step hook with a turn hook's ID = %d, %q", code, f.guestErr)
	}
}

func TestInitFailures(t *testing.T) {
	noTool := func(*ToolCall) (ToolResult, error) { return ToolResult{}, nil }
	tests := []struct {
		name  string
		setup func(api *API) error // nil: Register is not called
		code  map[string]int32
		want  string
	}{
		{"no Register", nil, nil, "the module calls no ganglion.Register"},
		{"setup fails", func(*API) error { return errors.New("no luck") }, nil, "setup: no luck"},
		{"setup panics", func(*API) error { panic("oops") }, nil, "panic in ganglion_init: oops"},
		{"bad tool name", func(api *API) error {
			api.Tools.Register(ToolSpec{Name: "no spaces"}, noTool) // error ignored: init still fails
			return nil
		}, nil, `register tool "no spaces": tool name "no spaces": want letters, digits, '_' or '-'`},
		{"tool twice", func(api *API) error {
			api.Tools.Register(ToolSpec{Name: "t"}, noTool)
			return api.Tools.Register(ToolSpec{Name: "t"}, noTool)
		}, nil, `setup: register tool "t": already registered`},
		{"nil middleware", func(api *API) error { api.Pipeline.Step(nil); return nil }, nil, "register step middleware: nil function"},
		{"host refuses the manifest", func(*API) error { return nil }, map[string]int32{"manifest": int32(CodeInvalid)},
			"ganglion: manifest: manifest refused by the fake"},
		{"host refuses a registration", func(api *API) error { api.Pipeline.Turn(func(*Turn) error { return nil }); return nil },
			map[string]int32{"register": int32(CodeDenied)}, "ganglion: register turn: register refused by the fake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake().use(t)
			f.codes = tt.code
			if f.codes == nil {
				f.codes = map[string]int32{}
			}
			if tt.setup != nil {
				Register(Manifest{Name: "x"}, tt.setup)
			}
			if code := runInit(); code != 1 || !strings.HasPrefix(f.guestErr, tt.want) {
				t.Errorf("runInit() = %d, %q; want 1, %q", code, f.guestErr, tt.want)
			}
			// A setup that failed still declares the manifest, for a host
			// to show; so does a registration the host refused, after it.
			wantDeclared := strings.HasPrefix(tt.want, "setup: ") || tt.name == "host refuses a registration"
			if declared := strings.Contains(f.gotManifest, `"name":"x"`); declared != wantDeclared {
				t.Errorf("manifest declared = %v (%q), want %v", declared, f.gotManifest, wantDeclared)
			}
		})
	}
}

func TestRegisterAfterSetup(t *testing.T) {
	f := newFake().use(t)
	var saved *API
	Register(Manifest{Name: "x"}, func(api *API) error {
		saved = api
		api.Pipeline.Turn(func(t *Turn) error {
			saved.Pipeline.Turn(func(*Turn) error { return nil })
			return nil
		})
		return nil
	})
	if code := runInit(); code != 0 {
		t.Fatal(f.guestErr)
	}
	// Registering outside setup is a programmer's error: a panic (2).
	if code := runHook(kindTurn, 1, 1); code != 2 || !strings.Contains(f.guestErr, "registered after setup returned") {
		t.Errorf("registering in a hook = %d, %q", code, f.guestErr)
	}
}

func TestHookResults(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		kind     int32
		hook     any
		nextCode int32
		wantCode int32
		wantErr  string // set_error's message
		wantLog  string // a prefix of the log
		wantSet  string // RESULT set_field
	}{
		{"ok", kindTurn, TurnFunc(func(t *Turn) error { return t.Next() }), 0, 0, "", "", ""},
		{"own error", kindTurn, TurnFunc(func(*Turn) error { return boom }), 0, 1, "boom", "", ""},
		{"panic", kindStep, StepFunc(func(*Step) error { panic("kaput") }), 0, 2, "kaput", "ERROR panic in step hook: kaput\ngoroutine", ""},
		{"runtime error", kindToolCall, ToolCallFunc(func(*ToolCall) error { nilMap()[1]++; return nil }), 0, 2,
			"assignment to entry in nil map", "ERROR panic", ""},
		{"refused accessor", kindTurn, TurnFunc(func(t *Turn) error { t.TurnID(); return nil }), 0, 1,
			"ganglion: field TURN_ID: no such field", "", ""},
		{"next's failure passed on", kindTurn, TurnFunc(func(t *Turn) error { return t.Next() }), int32(CodeFailed), 0, "", "", ""},
		{"next's failure wrapped", kindStep, StepFunc(func(s *Step) error { return fmt.Errorf("step: %w", s.Next()) }), int32(CodeFailed), 0, "", "", ""},
		{"next refused", kindTurn, TurnFunc(func(t *Turn) error { return t.Next() }), int32(CodePhase), 1, "ganglion: next: next refused by the fake", "", ""},
		{"tool", kindTool, ToolFunc(func(*ToolCall) (ToolResult, error) { return ToolResult{Content: "5"}, nil }), 0, 0, "", "",
			`{"content":"5","is_error":false}`},
		// The hook fails; the runtime makes it the result `tool "name" failed: boom`.
		{"tool error", kindTool, ToolFunc(func(*ToolCall) (ToolResult, error) { return ToolResult{Content: "x"}, boom }), 0, 1, "boom", "", ""},
		{"event error", kindEvent, EventFunc(func(*Event) error { return boom }), 0, 1, "boom", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake().use(t)
			if tt.nextCode != 0 {
				f.codes["next"] = tt.nextCode
			}
			Register(Manifest{Name: "x"}, func(api *API) error {
				switch h := tt.hook.(type) {
				case TurnFunc:
					api.Pipeline.Turn(h)
				case StepFunc:
					api.Pipeline.Step(h)
				case ToolCallFunc:
					api.Pipeline.ToolCall(h)
				case ToolFunc:
					return api.Tools.Register(ToolSpec{Name: "t"}, h)
				case EventFunc:
					return api.Events.Subscribe("a.*", h)
				}
				return nil
			})
			if code := runInit(); code != 0 {
				t.Fatal(f.guestErr)
			}
			if code := runHook(tt.kind, 3, 1); code != tt.wantCode || f.guestErr != tt.wantErr {
				t.Errorf("runHook = %d, set_error %q; want %d, %q", code, f.guestErr, tt.wantCode, tt.wantErr)
			}
			logs := strings.Join(f.logs, "\n")
			if !strings.HasPrefix(logs, tt.wantLog) || (tt.wantLog == "") != (logs == "") {
				t.Errorf("logs %q, want a prefix %q", logs, tt.wantLog)
			}
			if got := f.set[fieldResult]; got != tt.wantSet {
				t.Errorf("RESULT set to %q, want %q", got, tt.wantSet)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	f := newFake().use(t)
	l := Logger().With("agent_kind", "test").WithGroup("g")
	l.Info("hello world", "n", 3, "s", "two words", slog.Group("sub", "k", "v"))
	l.Debug("quiet", "empty", "")
	want := []string{
		`INFO hello world agent_kind=test g.n=3 g.s="two words" g.sub.k=v`,
		`DEBUG quiet agent_kind=test g.empty=""`,
	}
	if fmt.Sprint(f.logs) != fmt.Sprint(want) {
		t.Errorf("logs\n got %q\nwant %q", f.logs, want)
	}
}

func TestNoHost(t *testing.T) {
	c := &Turn{conversation: conversation{hook{1}}}
	err := c.SetResult(TurnResult{})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "GOOS=wasip1") {
		t.Errorf("outside a guest SetResult() = %v, want a failure naming wasip1", err)
	}
}

// nilMap returns a nil map, for a hook that panics with a runtime error.
func nilMap() map[int]int { return nil }

func TestAgents(t *testing.T) {
	f := newFake().use(t)
	turn := &Turn{conversation: conversation{hook{7}}}
	reply, err := turn.Agents().Request("reviewer", "review this", AgentOptions{Timeout: 2 * time.Second})
	if err != nil || reply.Text != "pong from the reviewer" || reply.FinishReason != "text_response" {
		t.Fatalf("Request = %+v, %v", reply, err)
	}
	if err := (&Step{conversation: conversation{hook{8}}}).Agents().Send("notifier", "done", AgentOptions{Instance: "ops", Metadata: map[string]any{"priority": "high"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"agent":"reviewer","text":"review this","timeout_ms":2000}`, `{"agent":"notifier","instance":"ops","text":"done","metadata":{"priority":"high"}}`}
	if strings.Join(f.agentReqs, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests = %q, want %q", f.agentReqs, want)
	}
	f.codes["agents_request"] = int32(CodeDenied)
	_, err = turn.Agents().Request("reviewer", "again", AgentOptions{})
	if !errors.Is(err, ErrDenied) || err.Error() != "ganglion: agents_request: agents_request refused by the fake" {
		t.Errorf("refused Request: %v", err)
	}
}

// TestNextFailuresAreSettled: the failure of Next is kept by handle,
// outside the contexts, from Next until the hook returns, on every path:
// handed back, swallowed, wrapped, panicked; and hooks nested in Next
// keep their own.
func TestNextFailuresAreSettled(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		hook     TurnFunc
		wantCode int32
		wantErr  string
	}{
		{"handed back", func(t *Turn) error { return t.Next() }, 0, ""},
		{"wrapped", func(t *Turn) error { return fmt.Errorf("turn: %w", t.Next()) }, 0, ""},
		{"swallowed", func(t *Turn) error { _ = t.Next(); return nil }, 0, ""},
		{"replaced", func(t *Turn) error { _ = t.Next(); return boom }, 1, "boom"},
		{"panicked", func(t *Turn) error { _ = t.Next(); panic("kaput") }, 2, "kaput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake().use(t)
			f.codes["next"] = int32(CodeFailed)
			Register(Manifest{Name: "x"}, func(api *API) error { api.Pipeline.Turn(tt.hook); return nil })
			if code := runInit(); code != 0 {
				t.Fatal(f.guestErr)
			}
			if code := runHook(kindTurn, 7, 1); code != tt.wantCode || f.guestErr != tt.wantErr {
				t.Errorf("runHook = %d, set_error %q; want %d, %q", code, f.guestErr, tt.wantCode, tt.wantErr)
			}
			if len(nextFailures) != 0 {
				t.Errorf("failures of Next left after the hook returned: %v", nextFailures)
			}
		})
	}
	t.Run("nested", func(t *testing.T) {
		// The turn hook (handle 1) runs a step hook (handle 2) within its
		// Next; the step hook's Next fails and it hands the failure back.
		// Then the turn's own Next fails with it: each hook settles its own.
		f := newFake().use(t)
		Register(Manifest{Name: "x"}, func(api *API) error {
			api.Pipeline.Turn(func(t *Turn) error { return fmt.Errorf("turn: %w", t.Next()) })
			api.Pipeline.Step(func(s *Step) error { return s.Next() })
			return nil
		})
		if code := runInit(); code != 0 {
			t.Fatal(f.guestErr)
		}
		var stepCode int32
		f.onNext = func(h int32) int32 {
			if h == 1 {
				stepCode = runHook(kindStep, 2, 2)
				if len(nextFailures) != 0 {
					t.Errorf("the step hook left %v", nextFailures)
				}
			}
			f.lastErr = "failed"
			return int32(CodeFailed)
		}
		if code := runHook(kindTurn, 1, 1); code != 0 || stepCode != 0 {
			t.Errorf("turn hook = %d, step hook = %d; want both 0 (the failure handed back)", code, stepCode)
		}
		if len(nextFailures) != 0 {
			t.Errorf("failures of Next left: %v", nextFailures)
		}
	})
	t.Run("re-entered after next failed", func(t *testing.T) {
		// The turn hook (handle 1) hands back its Next's failure, but a
		// step hook (handle 2) runs in the guest between the two (as a
		// nested agent call would run it) and swallows a failure of its
		// own Next: a failure kept in one place, not by handle, would be
		// the step's, or gone, when the turn hook returns.
		f := newFake().use(t)
		f.codes["next"] = int32(CodeFailed)
		var stepCode int32
		Register(Manifest{Name: "x"}, func(api *API) error {
			api.Pipeline.Turn(func(t *Turn) error {
				err := t.Next()
				stepCode = runHook(kindStep, 2, 2)
				return fmt.Errorf("turn: %w", err)
			})
			api.Pipeline.Step(func(s *Step) error { _ = s.Next(); return nil })
			return nil
		})
		if code := runInit(); code != 0 {
			t.Fatal(f.guestErr)
		}
		if code := runHook(kindTurn, 1, 1); code != 0 || stepCode != 0 || f.guestErr != "" {
			t.Errorf("turn hook = %d, step hook = %d, set_error %q; want 0, 0 (the failure handed back), none", code, stepCode, f.guestErr)
		}
		if len(nextFailures) != 0 {
			t.Errorf("failures of Next left: %v", nextFailures)
		}
	})
}

// TestContextIsItsHandle: a context holds its handle and nothing else,
// so that a slab of them holds no pointer for the guest's collector.
func TestContextIsItsHandle(t *testing.T) {
	for _, c := range []any{Turn{}, Step{}, ToolCall{}, Event{}} {
		if size := reflect.TypeOf(c).Size(); size != 4 {
			t.Errorf("%T is %d bytes, want 4 (its handle)", c, size)
		}
	}
}

// TestContextsAreNotReused: each hook call gets a context of its own, so
// that one kept past its call keeps its own handle, which the host refuses
// as stale, and never reads a later call's.
func TestContextsAreNotReused(t *testing.T) {
	newFake().use(t)
	var kept []*Turn
	var keptCalls []*ToolCall
	Register(Manifest{Name: "x", Version: "1.0.0"}, func(api *API) error {
		api.Pipeline.Turn(func(t *Turn) error { kept = append(kept, t); return nil })
		api.Pipeline.ToolCall(func(c *ToolCall) error { keptCalls = append(keptCalls, c); return nil })
		return nil
	})
	if code := runInit(); code != 0 {
		t.Fatal(code)
	}
	for h := int32(1); h <= 300; h++ { // past a slab's 256
		if code := runHook(kindTurn, h, 1); code != 0 {
			t.Fatal(code)
		}
		if code := runHook(kindToolCall, 1000+h, 2); code != 0 {
			t.Fatal(code)
		}
	}
	seen := map[*Turn]bool{}
	for i, c := range kept {
		if seen[c] || c.handle() != int32(i+1) {
			t.Fatalf("call %d's context: shared %v, handle %d", i+1, seen[c], c.handle())
		}
		seen[c] = true
	}
	for i, c := range keptCalls {
		if c.handle() != int32(1001+i) {
			t.Fatalf("tool call %d's context has handle %d", i+1, c.handle())
		}
	}
}
