package events_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
)

// TestEventRoundTrip: an event decodes to what was encoded, with the
// payload type of its topic for the runtime's topics.
func TestEventRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		ev   events.Event
		want any // the decoded Data
	}{
		{"a runtime topic", events.Event{Topic: events.ToolFinished, Time: at, Agent: "a", Instance: "k", TurnID: "turn-1", Source: "runtime",
			Data: events.ToolFinishedData{ToolStartedData: events.ToolStartedData{Tool: "read_file"}, Content: "hi", IsError: true}},
			events.ToolFinishedData{ToolStartedData: events.ToolStartedData{Tool: "read_file"}, Content: "hi", IsError: true}},
		{"a delta", events.Event{Topic: events.ModelDelta, Time: at, Source: "runtime", Data: events.ModelDeltaData{Kind: "text", Text: "he"}},
			events.ModelDeltaData{Kind: "text", Text: "he"}},
		{"another topic", events.Event{Topic: "approval.decided", Time: at, Source: "approval", Data: map[string]any{"decision": "ask"}},
			map[string]any{"decision": "ask"}},
		{"no data", events.Event{Topic: events.TurnStarted, Time: at, Source: "runtime"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			var got events.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := tt.ev
			want.Data = tt.want
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %s\n got %#v\nwant %#v", b, got, want)
			}
		})
	}
	var ev events.Event
	if err := json.Unmarshal([]byte(`{"topic":"tool.finished","data":{"is_error":"yes"}}`), &ev); err == nil ||
		err.Error() != "event tool.finished: data: json: cannot unmarshal string into Go struct field ToolFinishedData.is_error of type bool" {
		t.Errorf("a payload of the wrong shape: %v", err)
	}
}
