package pipeline_test

import (
	"encoding/json"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// TestToolCallJSON: arguments survive encoding byte for byte, malformed or
// not, since the runtime stores what the model wrote.
func TestToolCallJSON(t *testing.T) {
	tests := []struct {
		name, args, wire string
	}{
		{"object", `{"path": "a<b>&c"}`, `{"id":"c1","name":"t","arguments":"{\"path\": \"a\u003cb\u003e\u0026c\"}"}`},
		{"malformed", `{"path": `, `{"id":"c1","name":"t","arguments":"{\"path\": "}`},
		{"empty", ``, `{"id":"c1","name":"t","arguments":""}`},
		{"not JSON at all", `path=notes.txt`, `{"id":"c1","name":"t","arguments":"path=notes.txt"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pipeline.ToolCall{ID: "c1", Name: "t", Arguments: json.RawMessage(tt.args)}
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wire {
				t.Errorf("wire = %s, want %s", b, tt.wire)
			}
			var out pipeline.ToolCall
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out.ID != in.ID || out.Name != in.Name || string(out.Arguments) != tt.args {
				t.Errorf("round trip = %+v (args %q), want args %q", out, out.Arguments, tt.args)
			}
		})
	}
	t.Run("object form is accepted", func(t *testing.T) {
		var out pipeline.ToolCall
		if err := json.Unmarshal([]byte(`{"id":"c2","name":"t","arguments":{"a":1}}`), &out); err != nil {
			t.Fatal(err)
		}
		if string(out.Arguments) != `{"a":1}` {
			t.Errorf("args = %s", out.Arguments)
		}
	})
	t.Run("bad string", func(t *testing.T) {
		var out pipeline.ToolCall
		err := json.Unmarshal([]byte(`{"id":"c3","name":"t","arguments":"\x01"}`), &out)
		if err == nil {
			t.Fatal("want an error")
		}
	})
}
