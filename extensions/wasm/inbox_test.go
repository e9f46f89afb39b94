package wasm_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/internal/logtest"
	"github.com/ganglion-dev/ganglion/internal/racecheck"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestInbox runs testdata/inbox.wat, which registers an inbox and logs
// what the host wrote there: in its init, or, given a config, in its
// first turn hook (for which the host writes it at once). A registration
// out of place or out of shape is refused, with what and where. Whenever a
// hook's code runs (it starts, its next returns, it set its input) the
// inbox names its handle and holds its generations of INPUT_TEXT (turn and
// step hooks) and TOOL_NAME (toolCall hooks), 0 for a field the hook does
// not have or a text over 4 KiB; a value that comes again keeps its
// generation, and a new value gets a generation never given before.
func TestInbox(t *testing.T) {
	const (
		ok   = "inbox 0"
		once = "inbox 8 inbox is registered once"
	)
	refusals := []string{
		"inbox 8 inbox is registered in ganglion_init or in a hook",
		"inbox 8 inbox before manifest: declare the manifest first",
		"inbox 1 inbox: 8 bytes, want 24",
		"inbox 1 inbox: address 4100 is not a multiple of 8",
		"inbox 5 inbox: (65528, 24) is outside the guest's memory",
	}
	for _, mode := range []struct {
		name, config string
		init         []string // what init logs
		first, later []string // what a turn logs before its hooks' lines: the first, the others
	}{
		{"in init", "", append(slices.Clip(refusals), ok, once), nil, nil},
		{"in a hook", ", config: {lazy: true}", refusals, []string{ok}, []string{once}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			lines, bound := &logtest.Recorder{}, map[string]uint64{}
			rt := start(t, `[{wasm: testdata/inbox.wasm`+mode.config+`}]`, inboxScript, runtime.WithLogger(slog.New(lines)))
			if got := logtest.Messages(lines.Take()); !slices.Equal(got, mode.init) {
				t.Fatalf("init logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(mode.init, "\n"))
			}
			for i, tt := range inboxTurns {
				if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(tt.input)); err != nil {
					t.Fatalf("turn %d: %v", i+1, err)
				}
				before := mode.later
				if i == 0 {
					before = mode.first
				}
				// Each turn hook ends by trying to register again.
				got := logtest.Messages(lines.Take())
				if len(got) != len(before)+len(tt.want)+1 || !slices.Equal(got[:len(before)], before) || got[len(got)-1] != once {
					t.Fatalf("turn %d logged\n%s\nwant %q, %d hook lines, %q", i+1, strings.Join(got, "\n"), before, len(tt.want), once)
				}
				checkInbox(t, i+1, got[len(before):len(got)-1], tt.want, bound)
			}
		})
	}
}

// inboxScript answers "ok", with a tool call first for an input starting
// with "tool".
const inboxScript = `
agents:
  a:
    turns:
      - match: "^tool"
        steps:
          - tool_calls: [{name: nothing, id: c1}]
          - text: "after the tool"
    fallback:
      steps:
        - text: "ok"
`

// inboxTurns are TestInbox's turns, and the inbox its hooks log, one line
// each: as a hook starts and after its next returns ("next"), and after a
// turn hook set its input ("set"). A line is the hook's kind, then its
// generations by name: a name is bound to the generation where it first
// appears, which must be one not seen before, and means that generation
// after; "0" is 0.
var inboxTurns = []struct {
	input string
	want  []string
}{
	{"hello", []string{"turn: A 0", "step: A 0", "step next: A 0", "turn next: A 0"}},
	{"hello", []string{"turn: A 0", "step: A 0", "step next: A 0", "turn next: A 0"}},
	{"tool one", []string{"turn: B 0", "step: B 0", "tool_call: 0 C", "step next: B 0", "step: B 0", "step next: B 0", "turn next: B 0"}},
	{"hello", []string{"turn: D 0", "step: D 0", "step next: D 0", "turn next: D 0"}},
	{strings.Repeat("x", 4<<10+1), []string{"turn: 0 0", "step: 0 0", "step next: 0 0", "turn next: 0 0"}},
	{"tool two", []string{"turn: E 0", "step: E 0", "tool_call: 0 C", "step next: E 0", "step: E 0", "step next: E 0", "turn next: E 0"}},
	{strings.Repeat("y", 4<<10), []string{"turn: F 0", "step: F 0", "step next: F 0", "turn next: F 0"}},
	{"set it", []string{"turn: G 0", "turn set: H 0", "step: H 0", "step next: H 0", "turn next: H 0"}},
	{"changed", []string{"turn: H 0", "step: H 0", "step next: H 0", "turn next: H 0"}},
}

// checkInbox checks the hook lines turn logged against want (see
// inboxTurns); bound holds the generations named in earlier turns.
func checkInbox(t *testing.T, turn int, got, want []string, bound map[string]uint64) {
	t.Helper()
	for j, w := range want {
		kind, names, _ := strings.Cut(w, ": ")
		fields := strings.Fields(got[j])
		if len(fields) < 3 || strings.Join(fields[:len(fields)-3], " ") != kind {
			t.Fatalf("turn %d line %d: %q, want the inbox of %q", turn, j+1, got[j], kind)
		}
		if mark := fields[len(fields)-3]; mark != "=" {
			t.Errorf("turn %d: at %q the inbox names another handle than the hook's", turn, kind)
		}
		for k, name := range strings.Fields(names) {
			b, err := hex.DecodeString(fields[len(fields)-2+k])
			if err != nil || len(b) != 8 {
				t.Fatalf("turn %d line %d: %q is not 8 bytes in hex", turn, j+1, fields[len(fields)-2+k])
			}
			gen := binary.LittleEndian.Uint64(b)
			switch v, ok := bound[name]; {
			case name == "0":
				if gen != 0 {
					t.Errorf("turn %d: at %q slot %d is %d, want 0", turn, kind, k, gen)
				}
			case ok:
				if gen != v {
					t.Errorf("turn %d: at %q slot %d is %d, want %d (%s) again", turn, kind, k, gen, v, name)
				}
			default:
				for other, v := range bound {
					if gen == v {
						t.Errorf("turn %d: at %q slot %d is %d, given to %s before; want a new generation", turn, kind, k, gen, other)
					}
				}
				if gen == 0 {
					t.Errorf("turn %d: at %q slot %d is 0, want a generation", turn, kind, k)
				}
				bound[name] = gen
			}
		}
	}
}

// TestSDKsRegisterTheInboxWhenTheyRead: the Go and AssemblyScript SDKs
// register the inbox at the first read it serves, so that the host writes
// nothing for a guest that never reads the input text or a tool name.
func TestSDKsRegisterTheInboxWhenTheyRead(t *testing.T) {
	e, err := wasm.NewEngine(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	asGuardCode, err := os.ReadFile(filepath.Join(asRoot, asGuard))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		code   []byte
		config string
		want   bool
	}{
		{"go, reads nothing", goNoop(t), `{"read": false}`, false},
		{"go, reads", goNoop(t), `{"read": true}`, true},
		{"assemblyscript, reads", asGuardCode, ``, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := loadBytes(t, e, "guest", tt.code, wasm.Grants{Config: []byte(tt.config)})
			p := chain(t, x)
			for range 3 {
				if _, err := p.RunTurn(context.Background(), pipeline.NewTurnContext(turnInfo(&conv{}, "hi"))); err != nil {
					t.Fatal(err)
				}
			}
			if got := wasm.InboxRegistered(x); !slices.Equal(got, []bool{tt.want}) {
				t.Errorf("the instance registered an inbox: %v, want [%v]", got, tt.want)
			}
		})
	}
}

// TestHookCallsDoNotAllocate: on the host, a Go guest's turn hook that
// calls next allocates nothing, whether it reads its input text (the
// inbox registered, the text kept) or reads nothing (no inbox).
func TestHookCallsDoNotAllocate(t *testing.T) {
	if racecheck.Enabled {
		t.Skip("allocation counts are checked without -race (see internal/racecheck)")
	}
	e, err := wasm.NewEngine(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, config := range []string{`{"read": false}`, `{"read": true}`} {
		t.Run(config, func(t *testing.T) {
			p := chain(t, loadBytes(t, e, "gonoop", goNoop(t), wasm.Grants{Config: []byte(config)}))
			ctx, info := context.Background(), turnInfo(&conv{}, "What is the answer?")
			tc := pipeline.NewTurnContext(info)
			turn := func() {
				tc.Reset(info)
				if _, err := p.RunTurn(ctx, tc); err != nil {
					t.Fatal(err)
				}
			}
			turn() // the instance starts, and the inbox is registered
			if n := testing.AllocsPerRun(200, turn); n != 0 {
				t.Errorf("a hook call allocates %v times on the host, want 0", n)
			}
		})
	}
}
