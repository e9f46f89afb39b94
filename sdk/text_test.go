//go:build !wasip1

package ganglion

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/ganglion-dev/ganglion/internal/racecheck"
)

// TestTextReusesTheLastValue: a field read again with the same value
// comes back as the same string, not a new one; a changed value, another
// field, and a value too long to keep come back as their own.
func TestTextReusesTheLastValue(t *testing.T) {
	f := newFake().use(t)
	clear(lastText[:])
	c := &Turn{conversation: conversation{hook{1}}}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

	f.fields[fieldInputText] = []byte("What is the answer?")
	f.fields[fieldTurnID] = []byte("turn-1")
	first := c.InputText()
	if again := c.InputText(); again != "What is the answer?" || !same(first, again) {
		t.Errorf("read again: %q, the same string: %v; want the first read's string", again, same(first, again))
	}
	if id := c.TurnID(); id != "turn-1" {
		t.Errorf("TurnID() = %q, want turn-1", id)
	}
	if again := c.InputText(); !same(first, again) {
		t.Error("another field's read replaced the input text's")
	}

	f.fields[fieldInputText] = []byte("Something else")
	if changed := c.InputText(); changed != "Something else" || same(first, changed) {
		t.Errorf("after the value changed: %q, want the new value", changed)
	}
	if first != "What is the answer?" {
		t.Errorf("the first string changed to %q", first)
	}

	long := strings.Repeat("y", maxLastText+1)
	f.fields[fieldInputText] = []byte(long)
	a, b := c.InputText(), c.InputText()
	if a != long || b != long || same(a, b) {
		t.Errorf("a value over %d bytes: equal %v, shared %v; want it read whole and not kept", maxLastText, a == long && b == long, same(a, b))
	}
}

// TestTextReadsDoNotAllocate: reading a field whose value has not changed
// allocates nothing, in any of the text fields a hook reads at each call.
// In a Go guest an allocation costs about as much as the host call itself.
func TestTextReadsDoNotAllocate(t *testing.T) {
	if racecheck.Enabled {
		t.Skip("allocation counts are checked without -race (see internal/racecheck)")
	}
	f := newFake().use(t)
	clear(lastText[:])
	f.fields[fieldInputText] = []byte("What is the answer?")
	f.fields[fieldToolName] = []byte("lookup")
	f.fields[fieldTurnID] = []byte("turn-1")
	tests := []struct {
		name string
		read func() string
	}{
		{"Turn.InputText", (&Turn{conversation: conversation{hook{1}}}).InputText},
		{"Step.TurnID", (&Step{conversation: conversation{hook{1}}}).TurnID},
		{"ToolCall.Name", (&ToolCall{hook: hook{1}}).Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.read() // the first read keeps the value
			if n := testing.AllocsPerRun(100, func() { _ = tt.read() }); n != 0 {
				t.Errorf("%s allocates %v times a read, want 0", tt.name, n)
			}
		})
	}
}
