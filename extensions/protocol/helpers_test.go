package protocol_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// scanAll feeds in to a new scanner in chunks cut at the given offsets
// (ascending) and returns all events, adjacent text merged.
func scanAll(reg *protocol.Registry, in string, cuts []int, opts ...protocol.Option) []protocol.Event {
	return merge(scanRaw(reg, in, cuts, opts...))
}

// scanRaw is scanAll without merging.
func scanRaw(reg *protocol.Registry, in string, cuts []int, opts ...protocol.Option) []protocol.Event {
	s := protocol.NewScanner(reg, opts...)
	var evs []protocol.Event
	prev := 0
	for _, c := range cuts {
		evs = append(evs, s.Feed(in[prev:c])...)
		prev = c
	}
	evs = append(evs, s.Feed(in[prev:])...)
	return append(evs, s.Close()...)
}

// merge joins adjacent text events.
func merge(evs []protocol.Event) []protocol.Event {
	var out []protocol.Event
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			out = append(out, protocol.Event{Text: text.String()})
			text.Reset()
		}
	}
	for _, e := range evs {
		if e.Block == nil && e.Err == nil {
			text.WriteString(e.Text)
			continue
		}
		flush()
		out = append(out, e)
	}
	flush()
	return out
}

// render writes events one a line, for readable comparisons:
// "text: ...", "block KIND a-b: %+v", "error: msg".
func render(evs []protocol.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch {
		case e.Block != nil:
			fmt.Fprintf(&b, "block %s %d-%d: %+v\n", e.Block.Kind, e.Block.StartLine, e.Block.EndLine, e.Block.Value)
		case e.Err != nil:
			fmt.Fprintf(&b, "error %s %d (%d-%d): %s\n", e.Err.Kind, e.Err.Line, e.Err.StartLine, e.Err.EndLine, e.Err.Msg)
		default:
			fmt.Fprintf(&b, "text: %q\n", e.Text)
		}
	}
	return b.String()
}

// rebuild puts the input back together from the events: text, the raw text
// of each block, and the raw text of each failed region (once per region).
func rebuild(evs []protocol.Event) string {
	var b strings.Builder
	var last *protocol.Error
	for _, e := range evs {
		switch {
		case e.Block != nil:
			b.WriteString(e.Block.Raw)
			last = nil
		case e.Err != nil:
			if last == nil || last.StartLine != e.Err.StartLine || last.Raw != e.Err.Raw {
				b.WriteString(e.Err.Raw)
			}
			last = e.Err
		default:
			b.WriteString(e.Text)
			last = nil
		}
	}
	return b.String()
}

// errorTexts returns the messages of the error events.
func errorTexts(evs []protocol.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Err != nil {
			out = append(out, e.Err.Msg)
		}
	}
	return out
}

// parseOne parses in and returns its only block's value, failing the test on
// errors or another number of blocks.
func parseOne(t *testing.T, in string) any {
	t.Helper()
	blocks, errs := protocol.Parse(protocol.DefaultRegistry(), in)
	for _, e := range errs {
		t.Errorf("unexpected error: %s", e)
	}
	if len(blocks) != 1 {
		t.Fatalf("got %d blocks, want 1", len(blocks))
	}
	return blocks[0].Value
}

// parseErrs parses in and returns its error messages, failing the test if a
// block is valid.
func parseErrs(t *testing.T, in string) []string {
	t.Helper()
	blocks, errs := protocol.Parse(protocol.DefaultRegistry(), in)
	if len(blocks) != 0 {
		t.Errorf("got %d valid blocks, want none", len(blocks))
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
