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

// TestSameText: sameText agrees with ==, at lengths around its eight-byte
// step, with a difference in the first, a middle and the last byte, in
// the word loop and in the tail.
func TestSameText(t *testing.T) {
	base := "abcdefghijklmnopqrstuvwxyz0123456789"
	tests := []struct {
		name string
		s, b string
	}{
		{"both empty", "", ""},
		{"empty and not", "", "a"},
		{"one byte", "a", "a"},
		{"one byte differs", "a", "b"},
		{"seven bytes", base[:7], base[:7]},
		{"eight bytes", base[:8], base[:8]},
		{"nine bytes", base[:9], base[:9]},
		{"sixteen bytes", base[:16], base[:16]},
		{"lengths differ", base[:16], base[:15]},
		{"first byte differs", base, "X" + base[1:]},
		{"byte 7 differs", base, base[:7] + "X" + base[8:]},
		{"byte 8 differs", base, base[:8] + "X" + base[9:]},
		{"last word's last byte differs", base[:32], base[:31] + "X"},
		{"tail's last byte differs", base, base[:35] + "X"},
		{"high bytes", "\xff\xfe\x00\x80日本語テキスト", "\xff\xfe\x00\x80日本語テキスト"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := sameText(tt.s, []byte(tt.b)), tt.s == tt.b; got != want {
				t.Errorf("sameText(%q, %q) = %v, want %v", tt.s, tt.b, got, want)
			}
		})
	}
	// A slice that starts at an odd offset: the words are read unaligned.
	buf := []byte("_" + base)
	if !sameText(base, buf[1:]) || sameText(base[:35]+"X", buf[1:]) {
		t.Error("sameText is wrong on an unaligned slice")
	}
}

// FuzzSameText: sameText(s, b) == (s == string(b)) for any s and b, and
// for b equal to s but for one byte.
func FuzzSameText(f *testing.F) {
	f.Add("", "", 0)
	f.Add("What is the answer?", "What is the answer?", 3)
	f.Add("lookup", "lookuq", 5)
	f.Add(strings.Repeat("x", 64), strings.Repeat("x", 63)+"y", 63)
	f.Fuzz(func(t *testing.T, s, other string, i int) {
		if got, want := sameText(s, []byte(other)), s == other; got != want {
			t.Fatalf("sameText(%q, %q) = %v, want %v", s, other, got, want)
		}
		if !sameText(s, []byte(s)) {
			t.Fatalf("sameText(%q, itself) = false", s)
		}
		if len(s) > 0 {
			b := []byte(s)
			i = (i%len(b) + len(b)) % len(b)
			b[i] ^= 0x01
			if sameText(s, b) {
				t.Fatalf("sameText(%q, %q) = true, differing at byte %d", s, b, i)
			}
		}
	})
}

// TestCutString: a value is cut from the shared chunk, right after the
// value cut before it, as a string of its own bytes that neither the
// caller's buffer nor a later cut changes; a value over maxCutString, or
// the empty one, takes nothing from the chunk; a value that does not fit
// the rest of the chunk starts a new one.
func TestCutString(t *testing.T) {
	chunk = nil
	var prev string
	tests := []struct {
		name     string
		n        int
		fromRest bool // cut right after prev, from the chunk's rest
		rest     int  // len(chunk) after the cut
		fill     bool // no value: cut until the chunk's rest is rest
	}{
		{"first value: a new chunk", 7, false, strChunk - 7, false},
		{"next to the first", 1, true, strChunk - 8, false},
		{"empty", 0, false, strChunk - 8, false},
		{"longest cut", maxCutString, true, strChunk - 8 - maxCutString, false},
		{"too long to cut", maxCutString + 1, false, strChunk - 8 - maxCutString, false},
		{"fill the chunk", 0, false, 100, true},
		{"does not fit the rest", 101, false, strChunk - 101, false},
	}
	var kept, want []string
	for i, tt := range tests {
		if tt.fill {
			for len(chunk) > tt.rest {
				cutString(make([]byte, min(maxCutString, len(chunk)-tt.rest)))
			}
			prev = ""
			continue
		}
		b := []byte(strings.Repeat(string(rune('a'+i)), tt.n))
		s := cutString(b)
		clear(b) // the caller's buffer is reused: the string must not be it
		kept, want = append(kept, s), append(want, strings.Repeat(string(rune('a'+i)), tt.n))
		next := prev != "" && unsafe.StringData(s) == (*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(prev)), len(prev)))
		if next != tt.fromRest || len(chunk) != tt.rest {
			t.Errorf("%s: cut right after the last: %v, rest %d; want %v, %d", tt.name, next, len(chunk), tt.fromRest, tt.rest)
		}
		if tt.n > 0 && tt.n <= maxCutString {
			prev = s
		}
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Errorf("value %d is %q after later cuts, want %q", i, kept[i], want[i])
		}
	}
}

// TestCutStringDoesNotAllocate: a value that fits the chunk costs no
// allocation.
func TestCutStringDoesNotAllocate(t *testing.T) {
	if racecheck.Enabled {
		t.Skip("allocation counts are checked without -race (see internal/racecheck)")
	}
	chunk = make([]byte, strChunk)
	b := []byte("What is the answer?")
	if n := testing.AllocsPerRun(50, func() { _ = cutString(b) }); n != 0 {
		t.Errorf("cutString allocated %v times a call, want 0", n)
	}
}
