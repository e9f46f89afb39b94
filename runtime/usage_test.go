package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestUsage: an instance adds up its turns' usage, also of a step whose
// turn failed later; each turn's result has its own.
func TestUsage(t *testing.T) {
	h := newHarness(t, "\nagents:\n  - name: a\n", `
agents:
  a:
    turns:
      - match: fail
        steps:
          - tool_calls: [{name: nope}]
            usage: {input_tokens: 7, output_tokens: 1}
          - error: "provider down"
    fallback:
      steps:
        - text: hi
          usage: {input_tokens: 120, output_tokens: 30, cache_read_tokens: 100, cache_write_tokens: 5}
`)
	ctx := context.Background()
	check := func(want pipeline.Usage) {
		t.Helper()
		got, err := h.rt.Usage(ctx, "a", "k")
		if err != nil || got != want {
			t.Errorf("Usage = %+v, %v; want %+v", got, err, want)
		}
	}
	check(pipeline.Usage{})
	res := h.mustSend("a", "k", "x")
	if want := (pipeline.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 5}); res.Usage != want {
		t.Errorf("turn usage = %+v", res.Usage)
	}
	h.mustSend("a", "k", "y")
	check(pipeline.Usage{InputTokens: 240, OutputTokens: 60, CacheReadTokens: 200, CacheWriteTokens: 10})
	if _, err := h.send(ctx, "a", "k", "fail"); err == nil {
		t.Fatal("the failing turn did not fail")
	}
	check(pipeline.Usage{InputTokens: 247, OutputTokens: 61, CacheReadTokens: 200, CacheWriteTokens: 10})
	if _, err := h.rt.Usage(ctx, "nobody", "k"); !errors.Is(err, runtime.ErrUnknownAgent) {
		t.Errorf("unknown agent: %v", err)
	}
}
