package wasm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// TestCrashBackoffAndQuarantine: crashed calls in a row make the extension
// back off, then quarantine it; a normal call resets the count.
func TestCrashBackoffAndQuarantine(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x, err := e.Load(ctx, "hostile_trap", filepath.Join("testdata", "hostile_trap.wasm"), Limits{}, Grants{})
	if err != nil {
		t.Fatal(err)
	}
	var b pipeline.Builder
	if err := x.Register(extensions.NewAPI("hostile_trap", extensions.Host{Agent: "a", Builder: &b, Store: store.NewMemory()})); err != nil {
		t.Fatal(err)
	}
	p, err := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{FinishReason: pipeline.FinishText}, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(text string) error {
		tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-1",
			Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: text}})
		_, err := p.RunTurn(ctx, tc)
		return err
	}
	if err := turn("hello"); err != nil {
		t.Fatalf("a good turn: %v", err)
	}
	for i := 1; i < backoffAfter; i++ {
		if err := turn("trap"); err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("trap %d: %v", i, err)
		}
	}
	if err := turn("hello"); err != nil {
		t.Fatalf("a good turn after %d crashes: %v", backoffAfter-1, err)
	}
	if n := x.crashes.Load(); n != 0 {
		t.Fatalf("crashes after a good call = %d, want 0", n)
	}
	for i := 1; i <= backoffAfter; i++ {
		turn("trap")
	}
	err = turn("hello")
	if err == nil || !strings.Contains(err.Error(), `extension "hostile_trap" backs off after 5 crashed calls in a row (until `) {
		t.Fatalf("during the back-off: %v", err)
	}
	x.backoffUntil.Store(0) // the pause is over
	x.crashes.Store(quarantineAfter - 1)
	turn("trap")
	err = turn("hello")
	if !errors.Is(err, errQuarantined) || !strings.HasSuffix(err.Error(), `extension "hostile_trap" is quarantined after 20 crashed calls in a row; restart the runtime after fixing it`) {
		t.Fatalf("quarantined: %v", err)
	}
}
