package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

type depthKey struct{}

// TestObserve: each layer runs within the context its observer returned,
// nested as the layers are, and ends with its own failure only: a
// fail_open layer that failed is skipped, a failure from further in is
// not the outer layers', a panic ends its layer.
func TestObserve(t *testing.T) {
	fail := errors.New("boom")
	tests := []struct {
		name    string
		layers  []string // ext:behaviour, outermost first: ok, fail, panic; "open" for fail_open
		want    string
		wantErr string
	}{
		{"all pass", []string{"a:ok", "b:ok", "c:ok"}, "start a(0) start b(1) start c(2) end c end b end a", ""},
		{"fail_open skipped", []string{"a:ok", "b:fail:open", "c:ok"}, "start a(0) start b(1) start c(2) end c end b skipped: extension \"b\": turn middleware: boom end a", ""},
		{"fail_closed inner failure", []string{"a:ok", "b:ok", "c:fail"}, "start a(0) start b(1) start c(2) end c failed: extension \"c\": turn middleware: boom end b end a",
			`extension "c": turn middleware: boom`},
		{"panic", []string{"a:ok", "b:panic"}, "start a(0) start b(1) end b failed: panic: oops end a", `extension "b": turn middleware: panic: oops`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b pipeline.Builder
			for i, spec := range tt.layers {
				parts := strings.Split(spec, ":")
				owner := pipeline.Owner{Extension: parts[0]}
				if len(parts) == 3 {
					owner.OnError = pipeline.FailOpen
				}
				behaviour := parts[1]
				b.Turn(owner, func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					if d, _ := ctx.Value(depthKey{}).(int); d != i+1 {
						t.Errorf("layer %s runs with the context of depth %d, want %d", owner.Extension, d, i+1)
					}
					switch behaviour {
					case "fail":
						return nil, fail
					case "panic":
						panic("oops")
					}
					return tc.Next(ctx)
				}, pipeline.Priority(i))
			}
			var log []string
			p, err := b.Build(pipeline.Handlers{
				Turn: func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					return &pipeline.TurnResult{TurnID: tc.TurnID(), FinishReason: pipeline.FinishText}, nil
				},
				Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
					return &pipeline.StepResult{}, nil
				},
				ObserveStart: func(ctx context.Context, hook pipeline.Hook, o pipeline.Owner) context.Context {
					d, _ := ctx.Value(depthKey{}).(int)
					log = append(log, fmt.Sprintf("start %s(%d)", o.Extension, d))
					if hook != pipeline.HookTurn {
						t.Errorf("hook %s", hook)
					}
					return context.WithValue(ctx, depthKey{}, d+1)
				},
				ObserveEnd: func(ctx context.Context, hook pipeline.Hook, o pipeline.Owner, err error, skipped bool) {
					if d, _ := ctx.Value(depthKey{}).(int); d < 1 {
						t.Errorf("end of %s without the context its start returned", o.Extension)
					}
					s := "end " + o.Extension
					switch {
					case skipped:
						s += " skipped: " + err.Error()
					case err != nil:
						var pe *pipeline.PanicError
						if errors.As(err, &pe) {
							s += fmt.Sprintf(" failed: panic: %v", pe.Value)
						} else {
							s += " failed: " + err.Error()
						}
					}
					log = append(log, s)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", TurnID: "t1", Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"}})
			_, err = p.RunTurn(context.Background(), tc)
			if got := strings.Join(log, " "); got != tt.want {
				t.Errorf("observed:\n%s\nwant:\n%s", got, tt.want)
			}
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}
