package conformance_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// Assertions.

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %#v\nwant %#v", what, got, want)
	}
}

func eqLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n%s", what, diffLines(strings.Join(want, "\n"), strings.Join(got, "\n")))
	}
}

// diffLines shows a and b side by side, marking the lines that differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x == y {
			fmt.Fprintf(&out, "    %s\n", x)
		} else {
			fmt.Fprintf(&out, "  - %s\n  + %s\n", x, y)
		}
	}
	return out.String()
}

// changedLines lists the lines of a and b that differ, numbered.
func changedLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "  %4d - %s\n  %4d + %s\n", i+1, x, i+1, y)
		}
	}
	return out.String()
}

// canonical is v as JSON with sorted keys.
func canonical(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Errorf("event data: %v", err)
		return ""
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Errorf("event data: %v", err)
		return ""
	}
	b, _ = json.Marshal(x)
	return string(b)
}

func marshalIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // observations are plain data
	}
	return b
}

// summarize renders messages as "id role source: content".
func summarize(msgs []pipeline.Message) []string {
	var out []string
	for _, m := range msgs {
		src := string(m.Source.Type)
		if m.Source.Extension != "" {
			src += "/" + m.Source.Extension
		}
		out = append(out, fmt.Sprintf("%s %s %s: %s", m.ID, m.Role, src, m.Content))
	}
	return out
}

// call returns model call i, failing the test when there is none.
func call(t *testing.T, o *observation, i int) modelCall {
	t.Helper()
	if i >= len(o.Calls) {
		t.Fatalf("the model was called %d times, want more than %d", len(o.Calls), i)
	}
	return o.Calls[i]
}

// lastTool returns the last tool message, or nil.
func lastTool(msgs []pipeline.Message) *pipeline.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == pipeline.RoleTool {
			return &msgs[i]
		}
	}
	return nil
}

// toolMessage is lastTool, failing the test when there is none.
func toolMessage(t *testing.T, msgs []pipeline.Message) pipeline.Message {
	t.Helper()
	m := lastTool(msgs)
	if m == nil {
		t.Fatalf("no tool message in the history:\n%s", strings.Join(summarize(msgs), "\n"))
	}
	return *m
}
