package wasm_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
)

// guestLines collects the messages of the records an extension logs.
type guestLines struct {
	mu    *sync.Mutex
	lines *[]string
}

func newGuestLines() guestLines { return guestLines{mu: &sync.Mutex{}, lines: new([]string)} }

func (g guestLines) Enabled(context.Context, slog.Level) bool { return true }

func (g guestLines) Handle(_ context.Context, r slog.Record) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	*g.lines = append(*g.lines, r.Message)
	return nil
}

func (g guestLines) WithAttrs([]slog.Attr) slog.Handler { return g }
func (g guestLines) WithGroup(string) slog.Handler      { return g }

// take returns the lines logged since the last take.
func (g guestLines) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := *g.lines
	*g.lines = nil
	return l
}

// TestInbox runs testdata/inbox.wat, which registers an inbox and logs
// what the host wrote there. A registration out of place or out of shape
// is refused, with what and where. Whenever a hook's code runs (it
// starts, its next returns, it set its input) the inbox names its handle
// and holds its generations of INPUT_TEXT (turn and step hooks) and
// TOOL_NAME (toolCall hooks), 0 for a field the hook does not have or a
// text over 4 KiB; a value that comes again keeps its generation, and a
// new value gets a generation never given before.
func TestInbox(t *testing.T) {
	lines := newGuestLines()
	rt := start(t, `[{wasm: testdata/inbox.wasm}]`, `
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
`, runtime.WithLogger(slog.New(lines)))

	if got, want := lines.take(), []string{
		"inbox 8 inbox before manifest: declare the manifest first",
		"inbox 1 inbox: 8 bytes, want 24",
		"inbox 1 inbox: address 4100 is not a multiple of 8",
		"inbox 5 inbox: (65528, 24) is outside the guest's memory",
		"inbox 0",
		"inbox 8 inbox is registered once",
	}; !slices.Equal(got, want) {
		t.Fatalf("init logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Each hook logs the inbox as it starts and after its next returns
	// ("next"), and a turn hook after it set its input ("set"): whether it
	// names the hook's handle, and the generations, by name. A name is
	// bound to the generation where it first appears, which must be one not
	// seen before, and means that generation after; "0" is 0.
	const refused = "inbox 8 inbox is registered only during ganglion_init"
	long := strings.Repeat("x", 4<<10+1)
	plain := []string{"turn: A 0", "step: A 0", "step next: A 0", "turn next: A 0"}
	turns := []struct {
		input string
		want  []string
	}{
		{"hello", plain},
		{"hello", plain},
		{"tool one", []string{"turn: B 0", "step: B 0", "tool_call: 0 C", "step next: B 0", "step: B 0", "step next: B 0", "turn next: B 0"}},
		{"hello", []string{"turn: D 0", "step: D 0", "step next: D 0", "turn next: D 0"}},
		{long, []string{"turn: 0 0", "step: 0 0", "step next: 0 0", "turn next: 0 0"}},
		{"tool two", []string{"turn: E 0", "step: E 0", "tool_call: 0 C", "step next: E 0", "step: E 0", "step next: E 0", "turn next: E 0"}},
		{strings.Repeat("y", 4<<10), []string{"turn: F 0", "step: F 0", "step next: F 0", "turn next: F 0"}},
		{"set it", []string{"turn: G 0", "turn set: H 0", "step: H 0", "step next: H 0", "turn next: H 0"}},
		{"changed", []string{"turn: H 0", "step: H 0", "step next: H 0", "turn next: H 0"}},
	}
	bound := map[string]uint64{}
	for i, tt := range turns {
		if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(tt.input)); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		got := lines.take()
		if len(got) != len(tt.want)+1 || got[len(got)-1] != refused {
			t.Fatalf("turn %d logged\n%s\nwant %d hook lines and %q", i+1, strings.Join(got, "\n"), len(tt.want), refused)
		}
		for j, want := range tt.want {
			kind, names, _ := strings.Cut(want, ": ")
			fields := strings.Fields(got[j])
			if len(fields) < 3 || strings.Join(fields[:len(fields)-3], " ") != kind {
				t.Fatalf("turn %d line %d: %q, want the inbox of %q", i+1, j+1, got[j], kind)
			}
			if mark := fields[len(fields)-3]; mark != "=" {
				t.Errorf("turn %d: at %q the inbox names another handle than the hook's", i+1, kind)
			}
			for k, name := range strings.Fields(names) {
				b, err := hex.DecodeString(fields[len(fields)-2+k])
				if err != nil || len(b) != 8 {
					t.Fatalf("turn %d line %d: %q is not 8 bytes in hex", i+1, j+1, fields[len(fields)-2+k])
				}
				gen := binary.LittleEndian.Uint64(b)
				switch v, ok := bound[name]; {
				case name == "0":
					if gen != 0 {
						t.Errorf("turn %d: at %q slot %d is %d, want 0", i+1, kind, k, gen)
					}
				case ok:
					if gen != v {
						t.Errorf("turn %d: at %q slot %d is %d, want %d (%s) again", i+1, kind, k, gen, v, name)
					}
				default:
					for other, v := range bound {
						if gen == v {
							t.Errorf("turn %d: at %q slot %d is %d, given to %s before; want a new generation", i+1, kind, k, gen, other)
						}
					}
					if gen == 0 {
						t.Errorf("turn %d: at %q slot %d is 0, want a generation", i+1, kind, k)
					}
					bound[name] = gen
				}
			}
		}
	}
}
