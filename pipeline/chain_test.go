package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// conv is a minimal Conversation for tests.
type conv struct{ msgs []pipeline.Message }

func (c *conv) Len() int                  { return len(c.msgs) }
func (c *conv) At(i int) pipeline.Message { return c.msgs[i] }
func (c *conv) Apply(ev pipeline.MessageEvent) error {
	switch ev.Type {
	case pipeline.MessageAppend:
		c.msgs = append(c.msgs, ev.Message)
		return nil
	case pipeline.MessageRemove:
		for i, m := range c.msgs {
			if m.ID == ev.TargetID {
				c.msgs = append(c.msgs[:i], c.msgs[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("no message %q", ev.TargetID)
	}
	return fmt.Errorf("unsupported %q", ev.Type)
}

type layerSpec struct {
	ext      string
	priority int
	onError  pipeline.OnError
	fn       func(trace *[]string, name string) pipeline.TurnFunc
}

// passthrough records before/after around next.
func passthrough(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+">")
		r, err := t.Next(ctx)
		*trace = append(*trace, "<"+name)
		return r, err
	}
}

func shortCircuit(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+"!")
		return &pipeline.TurnResult{TurnID: t.TurnID(), FinishReason: pipeline.FinishText, Response: pipeline.Message{Content: "blocked by " + name}}, nil
	}
}

func nextTwice(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+">")
		if _, err := t.Next(ctx); err != nil {
			return nil, err
		}
		return t.Next(ctx)
	}
}

func failing(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+"x")
		return nil, errors.New("boom")
	}
}

func failingAfterNext(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+">")
		if _, err := t.Next(ctx); err != nil {
			return nil, err
		}
		*trace = append(*trace, name+"x")
		return nil, errors.New("late boom")
	}
}

func panicking(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		*trace = append(*trace, name+"!!")
		panic("kaboom")
	}
}

func inputRewriter(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		in := t.Input()
		in.Text = strings.ToUpper(in.Text)
		t.SetInput(in)
		return t.Next(ctx)
	}
}

// replacer calls next and answers with a result of its own.
func replacer(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		r, err := t.Next(ctx)
		if err != nil {
			return nil, err
		}
		*trace = append(*trace, name+"~")
		return &pipeline.TurnResult{TurnID: r.TurnID, FinishReason: r.FinishReason, Response: pipeline.Message{Content: name + " replaced " + r.Response.Content}}, nil
	}
}

// mutator calls next and changes its result's text in place.
func mutator(trace *[]string, name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		r, err := t.Next(ctx)
		if err != nil {
			return nil, err
		}
		*trace = append(*trace, name+"~")
		r.Response.Content = strings.ToUpper(r.Response.Content)
		return r, nil
	}
}

func TestTurnChain(t *testing.T) {
	tests := []struct {
		name      string
		layers    []layerSpec
		wantTrace string
		wantText  string
		wantErr   string
		wantExt   string
		wantBy    string // the result's AnsweredBy
		skips     int    // fail_open failures reported to OnSkip
	}{
		{
			name:      "no layers",
			wantTrace: "core",
			wantText:  "core:hello",
		},
		{
			name: "registration order",
			layers: []layerSpec{
				{ext: "a", fn: passthrough}, {ext: "b", fn: passthrough}, {ext: "c", fn: passthrough},
			},
			wantTrace: "a> b> c> core <c <b <a",
			wantText:  "core:hello",
		},
		{
			name: "priority then registration order",
			layers: []layerSpec{
				{ext: "a", priority: 10, fn: passthrough},
				{ext: "b", priority: -5, fn: passthrough},
				{ext: "c", priority: 10, fn: passthrough},
				{ext: "d", fn: passthrough},
			},
			wantTrace: "b> d> a> c> core <c <a <d <b",
			wantText:  "core:hello",
		},
		{
			name:      "short-circuit skips the rest",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "guard", fn: shortCircuit}, {ext: "c", fn: passthrough}},
			wantTrace: "a> guard! <a",
			wantText:  "blocked by guard",
			wantBy:    "guard",
		},
		{
			name:      "a replaced result is the replacer's",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "mask", fn: replacer}, {ext: "c", fn: passthrough}},
			wantTrace: "a> c> core <c mask~ <a",
			wantText:  "mask replaced core:hello",
			wantBy:    "mask",
		},
		{
			name:      "the outermost replacement wins",
			layers:    []layerSpec{{ext: "outer", fn: replacer}, {ext: "guard", fn: shortCircuit}},
			wantTrace: "guard! outer~",
			wantText:  "outer replaced blocked by guard",
			wantBy:    "outer",
		},
		{
			name:      "a text changed in place is the changer's",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "shout", fn: mutator}},
			wantTrace: "a> core shout~ <a",
			wantText:  "CORE:HELLO",
			wantBy:    "shout",
		},
		{
			name:      "a fail_open short-circuit answers",
			layers:    []layerSpec{{ext: "open", onError: pipeline.FailOpen, fn: shortCircuit}, {ext: "c", fn: passthrough}},
			wantTrace: "open!",
			wantText:  "blocked by open",
			wantBy:    "open",
		},
		{
			name:      "change what next sees",
			layers:    []layerSpec{{ext: "upper", fn: inputRewriter}},
			wantTrace: "core",
			wantText:  "core:HELLO",
		},
		{
			name:      "next twice fails and runs the rest once",
			layers:    []layerSpec{{ext: "greedy", fn: nextTwice}, {ext: "b", fn: passthrough}},
			wantTrace: "greedy> b> core <b",
			wantErr:   `extension "greedy": turn middleware: next called more than once`,
			wantExt:   "greedy",
		},
		{
			name:      "error names the extension",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "bad", fn: failing}, {ext: "c", fn: passthrough}},
			wantTrace: "a> badx <a",
			wantErr:   `extension "bad": turn middleware: boom`,
			wantExt:   "bad",
		},
		{
			name:      "panic names the extension",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "wild", fn: panicking}},
			wantTrace: "a> wild!!", // a panic unwinds: outer layers see no result
			wantErr:   `extension "wild": turn middleware: panic: kaboom`,
			wantExt:   "wild",
		},
		{
			name:      "error passing through is not blamed on outer layers",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "b", fn: passthrough}, {ext: "bad", fn: failing}},
			wantTrace: "a> b> badx <b <a",
			wantErr:   `extension "bad": turn middleware: boom`,
			wantExt:   "bad",
		},
		{
			name: "nil result is an error",
			layers: []layerSpec{{ext: "a", fn: passthrough}, {ext: "lazy", fn: func(*[]string, string) pipeline.TurnFunc {
				return func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, nil }
			}}},
			wantTrace: "a> <a",
			wantErr:   `extension "lazy": turn middleware: returned no result and no error`,
			wantExt:   "lazy",
		},
		{
			name:      "fail_open panic under fail_closed layers",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "wild", onError: pipeline.FailOpen, fn: panicking}, {ext: "c", fn: passthrough}},
			wantTrace: "a> wild!! c> core <c <a",
			wantText:  "core:hello",
			skips:     1,
		},
		{
			name:      "fail_closed panic under a fail_open layer is not skipped",
			layers:    []layerSpec{{ext: "open", onError: pipeline.FailOpen, fn: passthrough}, {ext: "wild", fn: panicking}},
			wantTrace: "open> wild!!",
			wantErr:   `extension "wild": turn middleware: panic: kaboom`,
			wantExt:   "wild",
		},
		{
			name:      "fail_open before next is skipped",
			layers:    []layerSpec{{ext: "a", fn: passthrough}, {ext: "flaky", onError: pipeline.FailOpen, fn: failing}, {ext: "c", fn: passthrough}},
			wantTrace: "a> flakyx c> core <c <a",
			wantText:  "core:hello",
			skips:     1,
		},
		{
			name:      "fail_open panic is skipped",
			layers:    []layerSpec{{ext: "wild", onError: pipeline.FailOpen, fn: panicking}},
			wantTrace: "wild!! core",
			wantText:  "core:hello",
			skips:     1,
		},
		{
			name:      "fail_open after next keeps next's outcome",
			layers:    []layerSpec{{ext: "late", onError: pipeline.FailOpen, fn: failingAfterNext}},
			wantTrace: "late> core latex",
			wantText:  "core:hello",
			skips:     1,
		},
		{
			name:      "fail_closed after next fails the turn",
			layers:    []layerSpec{{ext: "late", fn: failingAfterNext}},
			wantTrace: "late> core latex",
			wantErr:   `extension "late": turn middleware: late boom`,
			wantExt:   "late",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trace []string
			var b pipeline.Builder
			for _, l := range tt.layers {
				b.Turn(pipeline.Owner{Extension: l.ext, OnError: l.onError}, l.fn(&trace, l.ext), pipeline.Priority(l.priority))
			}
			var skipped []string
			p, err := b.Build(pipeline.Handlers{
				Turn: func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					trace = append(trace, "core")
					return &pipeline.TurnResult{TurnID: tc.TurnID(), FinishReason: pipeline.FinishText, Response: pipeline.Message{Content: "core:" + tc.Input().Text}}, nil
				},
				Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
					return &pipeline.StepResult{}, nil
				},
				OnSkip: func(sk pipeline.Skip) {
					if sk.TurnID != "t1" || sk.Agent != "a" || sk.Hook != pipeline.HookTurn {
						t.Errorf("skip without its turn: %+v", sk)
					}
					skipped = append(skipped, sk.Owner.Extension+": "+sk.Err.Error())
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", TurnID: "t1", Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hello"}, Conversation: &conv{}})
			res, err := p.RunTurn(context.Background(), tc)
			if got := strings.Join(trace, " "); got != tt.wantTrace {
				t.Errorf("trace = %q, want %q", got, tt.wantTrace)
			}
			if len(skipped) != tt.skips {
				t.Errorf("OnSkip calls = %q, want %d", skipped, tt.skips)
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				var me *pipeline.MiddlewareError
				if !errors.As(err, &me) || me.Extension != tt.wantExt || me.Hook != pipeline.HookTurn {
					t.Errorf("err = %#v, want MiddlewareError for %q", err, tt.wantExt)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if res.Response.Content != tt.wantText {
				t.Errorf("response = %q, want %q", res.Response.Content, tt.wantText)
			}
			if res.AnsweredBy != tt.wantBy {
				t.Errorf("AnsweredBy = %q, want %q", res.AnsweredBy, tt.wantBy)
			}
		})
	}
}

func TestNextOutsideChain(t *testing.T) {
	tc := pipeline.NewTurnContext(pipeline.TurnInfo{})
	if _, err := tc.Next(context.Background()); !errors.Is(err, pipeline.ErrNextOutsideChain) {
		t.Fatalf("err = %v, want ErrNextOutsideChain", err)
	}
	// A context kept after its layer returned cannot run the chain again.
	var kept *pipeline.TurnContext
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "keeper"}, func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		kept = t
		return t.Next(ctx)
	})
	p, _ := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{}, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	if _, err := p.RunTurn(context.Background(), pipeline.NewTurnContext(pipeline.TurnInfo{})); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Next(context.Background()); !errors.Is(err, pipeline.ErrNextOutsideChain) {
		t.Fatalf("late Next err = %v, want ErrNextOutsideChain", err)
	}
}

func TestHandlerPanicIsAnError(t *testing.T) {
	var b pipeline.Builder
	p, _ := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { panic("core bug") },
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	_, err := p.RunTurn(context.Background(), pipeline.NewTurnContext(pipeline.TurnInfo{}))
	var pe *pipeline.PanicError
	if err == nil || err.Error() != "turn handler: panic: core bug" || !errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
}

func TestManyLayers(t *testing.T) {
	// More than 64 layers exercises the overflow of the next-called bitmap.
	const n = 130
	var b pipeline.Builder
	count := 0
	for i := range n {
		b.Turn(pipeline.Owner{Extension: fmt.Sprint("e", i)}, func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			count++
			if i == n-1 {
				if _, err := t.Next(ctx); err != nil {
					return nil, err
				}
				return t.Next(ctx)
			}
			return t.Next(ctx)
		})
	}
	p, _ := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{}, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	for range 2 { // twice: the context's state must reset between runs
		count = 0
		_, err := p.RunTurn(context.Background(), pipeline.NewTurnContext(pipeline.TurnInfo{}))
		if err == nil || err.Error() != `extension "e129": turn middleware: next called more than once` || count != n {
			t.Fatalf("count=%d err=%v", count, err)
		}
	}
}

// TestStepChainOutcomes checks each outcome of a step layer at every
// position: the outermost layer runs through the chain's general path, the
// inner ones in place from the layer above's Next.
func TestStepChainOutcomes(t *testing.T) {
	boom := errors.New("boom")
	kept := &pipeline.StepResult{Message: pipeline.Message{Content: "kept"}}
	tests := []struct {
		name    string
		fn      pipeline.StepFunc
		wantErr string // with "%s" for the layer's extension
		blamed  bool   // the error is a MiddlewareError of the layer
		want    string // the result's content when no error
	}{
		{
			name: "pass-through",
			fn:   func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) { return s.Next(ctx) },
			want: "core",
		},
		{
			name: "own result",
			fn:   func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return kept, nil },
			want: "kept",
		},
		{
			name:    "no result and no error",
			fn:      func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return nil, nil },
			wantErr: `extension "%s": step middleware: returned no result and no error`,
			blamed:  true,
		},
		{
			name:    "an error",
			fn:      func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return nil, boom },
			wantErr: `extension "%s": step middleware: boom`,
			blamed:  true,
		},
		{
			name:    "an error with a result",
			fn:      func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return kept, boom },
			wantErr: `extension "%s": step middleware: boom`,
			blamed:  true,
		},
		{
			name: "an error with a result after next",
			fn: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
				r, _ := s.Next(ctx)
				return r, boom
			},
			wantErr: `extension "%s": step middleware: boom`,
			blamed:  true,
		},
		{
			name: "next's error passed on",
			fn: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
				return s.Next(ctx)
			},
			wantErr: "step handler failed", // the core's, not the layer's
		},
	}
	for _, tt := range tests {
		for pos := range 3 {
			t.Run(fmt.Sprintf("%s/layer %d of 3", tt.name, pos+1), func(t *testing.T) {
				var b pipeline.Builder
				for i := range 3 {
					ext := fmt.Sprintf("l%d", i+1)
					fn := func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) { return s.Next(ctx) }
					if i == pos {
						fn = tt.fn
					}
					b.Step(pipeline.Owner{Extension: ext}, fn)
				}
				coreErr := tt.wantErr == "step handler failed"
				p, err := b.Build(pipeline.Handlers{
					Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
						return &pipeline.TurnResult{}, nil
					},
					Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
						if coreErr {
							return nil, errors.New("step handler failed")
						}
						return &pipeline.StepResult{Message: pipeline.Message{Content: "core"}}, nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				sc := pipeline.NewStepContext(pipeline.NewTurnContext(pipeline.TurnInfo{}), 1, nil)
				res, err := p.RunStep(context.Background(), sc)
				if tt.wantErr == "" {
					if err != nil {
						t.Fatalf("err = %v", err)
					}
					if res.Message.Content != tt.want {
						t.Fatalf("result = %q, want %q", res.Message.Content, tt.want)
					}
					return
				}
				ext := fmt.Sprintf("l%d", pos+1)
				want := tt.wantErr
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, ext)
				}
				if err == nil || err.Error() != want {
					t.Fatalf("err = %v, want %q", err, want)
				}
				if res != nil {
					t.Errorf("a failed step returned a result: %+v", res)
				}
				var me *pipeline.MiddlewareError
				if got := errors.As(err, &me); got != tt.blamed || (got && me.Extension != ext) {
					t.Errorf("err = %#v: blamed on a layer %v, want %v (%s)", err, got, tt.blamed, ext)
				}
			})
		}
	}
}
