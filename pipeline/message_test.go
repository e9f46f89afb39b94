package pipeline_test

import (
	"encoding/json"
	"errors"
	"strings"
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

// TestCheckMetadata: a reserved key may not be set, nor changed from what
// it was, unless allowed; the same value after a JSON round trip is no
// change; other keys pass.
func TestCheckMetadata(t *testing.T) {
	const tail = `; name your own keys with a prefix, such as `
	viaJSON := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out
	}
	runtimeMD := map[string]any{"turn_id": "turn-3", "reported": 2, "taskChain": []string{"a/k"}, "summary": map[string]any{"messages": 4}}
	tests := []struct {
		name       string
		prev, next map[string]any
		allow      []string
		want       string
	}{
		{"nothing", nil, nil, nil, ""},
		{"the caller's keys", nil, map[string]any{"channel": "gui", "replyTo": "tab-1", "requester": "alice", "myapp.truncated": true}, nil, ""},
		{"a reserved key", nil, map[string]any{"truncated": true},
			nil, `metadata key "truncated" is reserved by the runtime: the input may not set it (it leaves the message out of what the model sees)` + tail + `"myapp.truncated"`},
		{"a reserved key set to false", nil, map[string]any{"pinned": false},
			nil, `metadata key "pinned" is reserved by the runtime: the input may not set it (it keeps the message in every context window, whatever it costs)` + tail + `"myapp.pinned"`},
		{"the first in byte order", nil, map[string]any{"taskId": "t", "awaits": "p", "callerAgent": "x"},
			nil, `metadata key "awaits" is reserved by the runtime: the input may not set it (it marks a tool result that waits for a pending item)` + tail + `"myapp.awaits"`},
		{"allowed", nil, map[string]any{"pinned": true, "summary": true}, []string{"pinned", "summary"}, ""},
		{"kept as it was", runtimeMD, runtimeMD, nil, ""},
		{"kept through JSON", runtimeMD, viaJSON(runtimeMD), nil, ""},
		{"left out", runtimeMD, map[string]any{"myapp.x": 1}, nil, ""},
		{"changed", runtimeMD, map[string]any{"turn_id": "turn-4"},
			nil, `metadata key "turn_id" is reserved by the runtime: the input may not change it (it names the turn a message belongs to)` + tail + `"myapp.turn_id"`},
		{"changed inside", runtimeMD, map[string]any{"summary": map[string]any{"messages": 5}},
			nil, `metadata key "summary" is reserved by the runtime: the input may not change it (it marks a summary, which the model sees in place of the messages it condenses)` + tail + `"myapp.summary"`},
		{"set where it was not", map[string]any{"turn_id": "turn-3"}, map[string]any{"turn_id": "turn-3", "resumes": "turn-1"},
			nil, `metadata key "resumes" is reserved by the runtime: the input may not set it (it names the paused turn a resume continues)` + tail + `"myapp.resumes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pipeline.CheckMetadata("the input", tt.prev, tt.next, tt.allow...)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckMetadata = %v, want nil", err)
			case tt.want == "":
			case err == nil || err.Error() != tt.want:
				t.Fatalf("CheckMetadata = %v\nwant %s", err, tt.want)
			case !errors.Is(err, pipeline.ErrReservedMetadata):
				t.Fatalf("%v does not match ErrReservedMetadata", err)
			}
		})
	}
}

// TestReservedMetadataHasNoDot: a key under a prefix of one's own is
// never reserved, as IsReservedMetadata promises, and each reserved key
// says what it does, for the error.
func TestReservedMetadataHasNoDot(t *testing.T) {
	if len(pipeline.ReservedMetadataReasons) == 0 {
		t.Fatal("no reserved keys")
	}
	for k, why := range pipeline.ReservedMetadataReasons {
		if strings.Contains(k, ".") || !strings.HasPrefix(why, "it ") || !pipeline.IsReservedMetadata(k) {
			t.Errorf("reserved key %q (%s)", k, why)
		}
	}
}
