package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// This file is the native twin: the behaviours of the guest twins
// (testdata/twin, testdata/rusttwin, testdata/astwin), written against the
// native Extension API. Keep them in step; the package doc lists what they
// do.

// twinConfig is the twin's config: section.
type twinConfig struct {
	// Tag names this configured instance in answers, events and errors.
	Tag string `json:"tag"`
	// Trace publishes twin.order as each hook enters and leaves, and wraps
	// the turn's response in the tag.
	Trace bool `json:"trace"`
	// Hide lists the tools a step hides when the input starts with "hide".
	Hide []string `json:"hide"`
	// Echo registers the tool twin_echo.
	Echo bool `json:"echo"`
}

// twinState is the twin's state per instance.
type twinState struct {
	Turns int      `json:"turns"`
	Tools []string `json:"tools,omitempty"`
}

// twinOrder is the data of twin.order.
type twinOrder struct {
	Tag  string `json:"tag"`
	Hook string `json:"hook"`
	At   string `json:"at"`
}

// twinTurn is the data of twin.turn.
type twinTurn struct {
	Tag   string `json:"tag"`
	Turns int    `json:"turns"`
}

// askRequest is the request of a twin_ask item: the call that waits.
type askRequest struct {
	Tag  string `json:"tag"`
	Tool string `json:"tool"`
}

// questionRequest is the request of a twin_question item.
type questionRequest struct {
	Tag      string `json:"tag"`
	Question string `json:"question"`
}

// resumingKey marks, in the context of a call a twin_ask item resumes, the
// call's ID: the toolCall middleware then runs it.
type resumingKey struct{}

// command splits the input into its first two words.
func command(input string) (word, arg string) {
	f := strings.Fields(input)
	if len(f) > 0 {
		word = f[0]
	}
	if len(f) > 1 {
		arg = f[1]
	}
	return word, arg
}

// newNativeTwin is the native twin's factory.
func newNativeTwin(cfg extensions.Config) (extensions.Extension, error) {
	var c twinConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.Tag == "" {
		return nil, errors.New("config: tag is required")
	}
	return extensions.Func(func(api *extensions.API) error { return registerTwin(api, c) }), nil
}

func registerTwin(api *extensions.API, cfg twinConfig) error {
	trace := func(instance, hook, at string) {
		if cfg.Trace {
			api.Events.Publish("twin.order", instance, twinOrder{cfg.Tag, hook, at})
		}
	}
	if err := registerPending(api, cfg); err != nil {
		return err
	}

	api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		input := t.Input().Text
		word, arg := command(input)
		var st twinState
		if _, err := api.State.Load(ctx, t.InstanceKey(), &st); err != nil {
			return nil, err
		}
		st.Turns++
		if err := api.State.Save(ctx, t.InstanceKey(), st); err != nil {
			return nil, err
		}
		trace(t.InstanceKey(), "turn", "enter")
		switch {
		case word == "stop":
			return &pipeline.TurnResult{FinishReason: pipeline.FinishText, Response: pipeline.Message{
				Role: pipeline.RoleAssistant, Content: cfg.Tag + " answered: " + input,
				// A WASM host gives a guest's answer this source by default;
				// the native API has no default.
				Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name},
			}}, nil
		case word == "fail" && arg == "turn":
			return nil, errors.New(cfg.Tag + ": turn failed on purpose")
		case word == "panic" && arg == "turn":
			panic(cfg.Tag + ": turn panicked on purpose")
		case word == "rewrite":
			in := t.Input()
			in.Text = "rewritten: " + in.Text
			t.SetInput(in)
		case word == "edit":
			err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{
				Role: pipeline.RoleSystem, Content: cfg.Tag + ": note before the input",
				Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name},
			}})
			if err != nil {
				return nil, err
			}
		}
		res, err := t.Next(ctx)
		if err != nil {
			return nil, err
		}
		if word == "twice" {
			if _, err := t.Next(ctx); err != nil {
				return nil, err
			}
		}
		if word == "fail" && arg == "turn-after" {
			return nil, errors.New(cfg.Tag + ": turn failed after next")
		}
		trace(t.InstanceKey(), "turn", "leave")
		if cfg.Trace {
			res.Response.Content = cfg.Tag + "(" + res.Response.Content + ")"
		}
		api.Events.Publish("twin.turn", t.InstanceKey(), twinTurn{cfg.Tag, st.Turns})
		return res, nil
	})

	api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
		word, arg := command(s.Input().Text)
		trace(s.InstanceKey(), "step", "enter")
		switch {
		case word == "hide":
			s.Tools().Filter(func(spec pipeline.ToolSpec) bool { return !slices.Contains(cfg.Hide, spec.Name) })
		case word == "edit" && s.Index() == 1:
			conv := s.Conversation()
			last := conv.At(conv.Len() - 1)
			last.Content = "edited: " + last.Content
			if err := s.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: last.ID, Message: last}); err != nil {
				return nil, err
			}
			first := conv.At(0)
			if err := s.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageRemove, TargetID: first.ID}); err != nil {
				return nil, err
			}
		case word == "fail" && arg == "step":
			return nil, errors.New(cfg.Tag + ": step failed on purpose")
		}
		res, err := s.Next(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case word == "more" && s.Index() == 1:
			res.Continue = true
		case word == "halt":
			res.Stop = pipeline.FinishMaxSteps
		case word == "ask" && s.Index() == 1:
			req, _ := json.Marshal(questionRequest{cfg.Tag, "Which one?"})
			if _, err := api.Pending.Pause(ctx, s, ledger.Item{Kind: "twin_question", Request: req, Required: true}, 0); err != nil {
				return nil, err
			}
			res.Stop = pipeline.FinishPaused
		}
		trace(s.InstanceKey(), "step", "leave")
		return res, nil
	})

	api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		var args struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(c.Arguments(), &args) // malformed arguments have no mode
		if id, _ := ctx.Value(resumingKey{}).(string); args.Mode == "ask" && id != c.CallID() {
			req, _ := json.Marshal(askRequest{cfg.Tag, c.Name()})
			if _, err := api.Pending.PauseCall(ctx, c, ledger.Item{Kind: "twin_ask", Request: req, Required: true}, 0); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: cfg.Tag + " waits for a human"}, nil
		}
		trace(c.InstanceKey(), "tool_call", "enter")
		switch args.Mode {
		case "fail":
			return nil, errors.New(cfg.Tag + ": tool call failed on purpose")
		case "args":
			b, err := json.Marshal(map[string]string{"text": "changed by " + cfg.Tag})
			if err != nil {
				return nil, err
			}
			c.SetArguments(b)
		}
		res, err := c.Next(ctx)
		if err != nil {
			return nil, err
		}
		if args.Mode == "replace" {
			res = &pipeline.ToolResult{CallID: res.CallID, Name: res.Name, Content: cfg.Tag + " replaced: " + res.Content}
		}
		trace(c.InstanceKey(), "tool_call", "leave")
		return res, nil
	})

	if cfg.Echo {
		if err := registerEcho(api, cfg); err != nil {
			return err
		}
	}

	// Events of every agent come through the bus: record this agent's.
	_, err := api.Events.Subscribe(events.ToolFinished, func(ev events.Event) {
		if ev.Agent != api.Agent {
			return
		}
		data, _ := ev.Data.(events.ToolFinishedData)
		tool, content := data.Tool, data.Content
		ctx := context.Background()
		var st twinState
		if _, err := api.State.Load(ctx, ev.Instance, &st); err != nil {
			api.Logger.Warn("tool.finished: load state", "err", err)
			return
		}
		st.Tools = append(st.Tools, tool+": "+content)
		if err := api.State.Save(ctx, ev.Instance, st); err != nil {
			api.Logger.Warn("tool.finished: save state", "err", err)
		}
	})
	return err
}

// registerEcho registers twin_echo, which echoes its text.
func registerEcho(api *extensions.API, cfg twinConfig) error {
	return api.Tools.Register(pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{
			Name:        "twin_echo",
			Description: "Echoes its text.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Category:    pipeline.CategoryRead,
		},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(c.Arguments(), &args); err != nil {
				return nil, err
			}
			if args.Text == "" {
				return nil, errors.New("twin_echo: the text is empty")
			}
			if k := c.IdempotencyKey(); len(k) != 35 || k[:3] != "gk-" {
				return nil, errors.New("twin_echo: no idempotency key: " + k)
			}
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: cfg.Tag + " echoes " + args.Text}, nil
		},
	})
}

// registerPending registers the twin's pending kinds: twin_ask, which
// pauses a tool call until a human answers yes (the call runs) or no (it
// gets the twin's refusal), and twin_question, which takes any answer but
// an empty one.
func registerPending(api *extensions.API, cfg twinConfig) error {
	err := api.Pending.Handle(extensions.PendingKind{
		Name: "twin_ask",
		Resolve: func(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
			switch {
			case act.Kind == extensions.ActionAnswer && act.Value == "yes":
				return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: "yes", Message: cfg.Tag + ": approved"}}, nil
			case act.Kind == extensions.ActionAnswer && act.Value == "no":
				return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Answer: "no", Message: cfg.Tag + ": denied"}}, nil
			}
			return extensions.Outcome{}, fmt.Errorf("%w: %s: answer yes or no, not %q", extensions.ErrInvalidAction, cfg.Tag, act.Value)
		},
		Resume: func(ctx context.Context, it ledger.Item, rc extensions.ResumeCall) error {
			if it.Answer != "yes" {
				return rc.Result(cfg.Tag+": the call was denied", true)
			}
			res, err := rc.Run(context.WithValue(ctx, resumingKey{}, it.CallID))
			if err != nil {
				return err
			}
			return rc.Result(res.Content, res.IsError)
		},
	})
	if err != nil {
		return err
	}
	return api.Pending.Handle(extensions.PendingKind{
		Name: "twin_question",
		Resolve: func(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
			if act.Kind != extensions.ActionAnswer {
				return extensions.Outcome{}, fmt.Errorf("%w: %s: a question takes an answer", extensions.ErrInvalidAction, cfg.Tag)
			}
			if strings.TrimSpace(act.Value) == "" {
				return extensions.Outcome{}, fmt.Errorf("%w: %s: the answer is empty", extensions.ErrInvalidAction, cfg.Tag)
			}
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: act.Value,
				Message: cfg.Tag + " got: " + act.Value}}, nil
		},
	})
}
