//go:build !wasip1

package ganglion

import (
	"fmt"
	"testing"
)

// TestInboxSavesReads: a text field whose generation the host wrote into
// the inbox is read from the host once a generation, and from the host
// again for another generation or none, or through a context the inbox
// does not name: an outer hook's while a nested one runs, one kept past
// its call.
func TestInboxSavesReads(t *testing.T) {
	f := newFake().use(t)
	// Each hook runs the step's body with its context, then Next.
	var body func(c Context) string
	var got string
	Register(Manifest{Name: "x"}, func(api *API) error {
		api.Pipeline.Turn(func(t *Turn) error { got = body(t); return t.Next() })
		api.Pipeline.Step(func(s *Step) error { got = body(s); return s.Next() })
		api.Pipeline.ToolCall(func(c *ToolCall) error { got = body(c); return c.Next() })
		return api.Tools.Register(ToolSpec{Name: "lookup"}, func(c *ToolCall) (ToolResult, error) {
			got = body(c)
			return ToolResult{Content: got}, nil
		})
	})
	if code := runInit(); code != 0 {
		t.Fatal(f.guestErr)
	}
	// enter sets what the host keeps in the inbox for the hook to run.
	enter := func(v [3]uint64) {
		f.running = v
		if f.box != nil {
			*f.box = v
		}
	}
	// The inbox is registered at the first read it serves, not before.
	enter([3]uint64{1, 5, 0})
	body = func(Context) string { return "" }
	if code := runHook(kindTurn, 1, 1); code != 0 || f.box != nil {
		t.Fatalf("a hook that read nothing: code %d, registered the inbox: %v; want 0, false", code, f.box != nil)
	}
	input := func(c Context) string { return c.(interface{ InputText() string }).InputText() }
	twice := func(read func(Context) string) func(Context) string {
		return func(c Context) string { return read(c) + "|" + read(c) }
	}
	var kept, outer Context
	steps := []struct {
		name      string
		kind, h   int32 // each a hook call of its own: a handle of its own
		gens      [2]uint64
		text      string // the host's INPUT_TEXT, or TOOL_NAME for toolCall and tool hooks
		body      func(c Context) string
		want      string
		wantReads int // field calls
	}{
		{"first read of a generation, registered", kindTurn, 2, [2]uint64{5, 0}, "hello", twice(input), "hello|hello", 1},
		{"same generation, next hook", kindStep, 3, [2]uint64{5, 0}, "hello", input, "hello", 0},
		{"a new generation", kindStep, 4, [2]uint64{6, 0}, "bye", twice(input), "bye|bye", 1},
		{"generation 0", kindStep, 5, [2]uint64{0, 0}, "bye", twice(input), "bye|bye", 2},
		{"after generation 0", kindStep, 6, [2]uint64{6, 0}, "bye", input, "bye", 0},
		{"keep a context", kindStep, 7, [2]uint64{6, 0}, "bye", func(c Context) string { kept = c; return input(c) }, "bye", 0},
		{"a kept context", kindStep, 8, [2]uint64{6, 0}, "bye", func(Context) string { return input(kept) }, "bye", 1},
		{"tool name", kindToolCall, 9, [2]uint64{6, 3}, "lookup", twice(func(c Context) string { return c.(*ToolCall).Name() }), "lookup|lookup", 1},
		{"tool name in a tool", kindTool, 10, [2]uint64{0, 3}, "lookup", func(c Context) string { return c.(*ToolCall).Name() }, "lookup", 0},
		{"input text kept beside the tool name", kindStep, 11, [2]uint64{6, 0}, "bye", input, "bye", 0},
	}
	for _, st := range steps {
		body = st.body
		field := int32(fieldInputText)
		if st.kind == kindToolCall || st.kind == kindTool {
			field = fieldToolName
		}
		f.fields[field] = []byte(st.text)
		enter([3]uint64{uint64(st.h), st.gens[0], st.gens[1]})
		before := len(f.bufLens)
		if code := runHook(st.kind, st.h, 1+st.kind-kindTurn); code != 0 {
			t.Fatalf("%s: hook failed: %s", st.name, f.guestErr)
		}
		if got != st.want || len(f.bufLens)-before != st.wantReads {
			t.Errorf("%s: read %q with %d host calls, want %q with %d", st.name, got, len(f.bufLens)-before, st.want, st.wantReads)
		}
		if f.box != &inbox {
			t.Fatalf("%s: the inbox is not registered", st.name)
		}
	}

	// A hook nested in Next reads another value under its own generation.
	// The host writes the outer hook's inbox again when Next returns; an
	// outer read while the nested hook's inbox is there goes to the host.
	f.fields[fieldInputText] = []byte("outer")
	enter([3]uint64{21, 20, 0})
	var reads []string
	nested := false // the turn hook's wrapper calls Next again: run it once
	f.onNext = func(h int32) int32 {
		if h != 21 || nested {
			return 0
		}
		nested = true
		f.fields[fieldInputText] = []byte("inner")
		enter([3]uint64{22, 21, 0})
		if code := runHook(kindStep, 22, 2); code != 0 || got != "inner" {
			t.Errorf("nested hook: code %d, read %q; want 0, %q", code, got, "inner")
		}
		reads = append(reads, input(outer))
		f.fields[fieldInputText] = []byte("outer")
		enter([3]uint64{21, 20, 0})
		return 0
	}
	body = func(c Context) string {
		if c.(interface{ handle() int32 }).handle() != 21 {
			return input(c)
		}
		outer = c
		reads = append(reads, input(c))
		if err := c.(*Turn).Next(); err != nil {
			t.Fatal(err)
		}
		reads = append(reads, input(c))
		return ""
	}
	before := len(f.bufLens)
	if code := runHook(kindTurn, 21, 1); code != 0 {
		t.Fatal(f.guestErr)
	}
	// Four host calls: the outer hook's first read; the nested hook's; the
	// outer read while the nested hook's inbox is there (the fake answers
	// the nested value: it serves every handle alike); and the outer read
	// after Next, as the nested read took the slot's kept value.
	if want := "[outer inner outer]"; fmt.Sprint(reads) != want || len(f.bufLens)-before != 4 {
		t.Errorf("the outer hook read %v around a nested hook with %d host calls, want %s with 4", reads, len(f.bufLens)-before, want)
	}
}
