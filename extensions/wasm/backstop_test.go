package wasm_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// turn runs one turn with input through the layers of x.
func turn(t testing.TB, x *wasm.Extension, input string) error {
	t.Helper()
	info := pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-1",
		Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: input}, Conversation: &conv{}}
	_, err := chain(t, x).RunTurn(context.Background(), pipeline.NewTurnContext(info))
	return err
}

// TestBackstop defeats metering (the module is loaded as written) and
// checks that the backstop still ends a guest that loops for ever, at
// about backstopFactor times its budget, with the deadline error; and that
// with metering on, metering stops it, not the backstop.
func TestBackstop(t *testing.T) {
	tests := []struct {
		name    string
		metered bool
		want    string
	}{
		{"metering defeated", false, `extension "x": turn middleware: ganglion_turn: deadline exceeded (stopped by the backstop: metering did not stop it)`},
		{"metered", true, `extension "x": turn middleware: ganglion_turn: deadline exceeded`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, "")
			if !tt.metered {
				wasm.SkipMetering(e)
			}
			x, err := e.Load(context.Background(), "x", filepath.Join("testdata", "hostile_loop.wasm"), wasm.Limits{Timeout: 100 * time.Millisecond}, wasm.Grants{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			if err := turn(t, x, "hello"); err != nil {
				t.Fatalf("a good turn: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- turn(t, x, "loop") }()
			select {
			case err = <-done:
			case <-time.After(failWithin):
				t.Fatalf("the looping turn still runs after %v", failWithin)
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("turn error\n got: %v\nwant: %s", err, tt.want)
			}
			var te *wasm.TrapError
			if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("turn error %v: a *wasm.TrapError: %v, matches context.DeadlineExceeded: %v, want both",
					err, errors.As(err, &te), errors.Is(err, context.DeadlineExceeded))
			}
			if err := turn(t, x, "hello"); err != nil {
				t.Errorf("a good turn after: %v", err)
			}
		})
	}
}
