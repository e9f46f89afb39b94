// Command twin is the WebAssembly twin of the conformance suite's native
// extension (extensions/conformance/twin_test.go): the same behaviours,
// written with the Go guest SDK. Keep the two in step; the package doc of
// extensions/conformance lists what they do.
//
// The conformance test builds it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o twin.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

// config is the extension's config: section.
type config struct {
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

// state is the extension's state per instance.
type state struct {
	Turns int      `json:"turns"`
	Tools []string `json:"tools,omitempty"`
}

// order is the data of twin.order.
type order struct {
	Tag  string `json:"tag"`
	Hook string `json:"hook"`
	At   string `json:"at"`
}

// turnEvent is the data of twin.turn.
type turnEvent struct {
	Tag   string `json:"tag"`
	Turns int    `json:"turns"`
}

var cfg config

func init() {
	ganglion.Register(ganglion.Manifest{Name: "twin", Version: "1.0.0", State: true, Publish: []string{"twin.*"}}, setup)
}

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

func setup(api *ganglion.API) error {
	if _, err := api.Config(&cfg); err != nil {
		return err
	}
	if cfg.Tag == "" {
		return errors.New("config: tag is required")
	}
	if err := registerPending(api); err != nil {
		return err
	}
	trace := func(c ganglion.Context, hook, at string) error {
		if !cfg.Trace {
			return nil
		}
		return api.Events.Publish(c, "twin.order", order{cfg.Tag, hook, at})
	}

	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		input := t.InputText()
		word, arg := command(input)
		var st state
		if _, err := t.State(&st); err != nil {
			return err
		}
		st.Turns++
		if err := t.SetState(st); err != nil {
			return err
		}
		if err := trace(t, "turn", "enter"); err != nil {
			return err
		}
		switch {
		case word == "stop":
			return t.SetResult(ganglion.TurnResult{FinishReason: ganglion.FinishText,
				Response: ganglion.Message{Content: cfg.Tag + " answered: " + input}})
		case word == "fail" && arg == "turn":
			return errors.New(cfg.Tag + ": turn failed on purpose")
		case word == "panic" && arg == "turn":
			panic(cfg.Tag + ": turn panicked on purpose")
		case word == "rewrite":
			in := t.Input()
			in.Text = "rewritten: " + in.Text
			if err := t.SetInput(in); err != nil {
				return err
			}
		case word == "edit":
			if err := t.Emit(ganglion.MessageEvent{Type: ganglion.MessageAppend,
				Message: ganglion.Message{Role: ganglion.RoleSystem, Content: cfg.Tag + ": note before the input"}}); err != nil {
				return err
			}
		}
		if err := t.Next(); err != nil {
			return err
		}
		if word == "twice" {
			if err := t.Next(); err != nil {
				return err
			}
		}
		if word == "fail" && arg == "turn-after" {
			return errors.New(cfg.Tag + ": turn failed after next")
		}
		if err := trace(t, "turn", "leave"); err != nil {
			return err
		}
		if cfg.Trace {
			r, err := t.Result()
			if err != nil {
				return err
			}
			r.Response.Content = cfg.Tag + "(" + r.Response.Content + ")"
			if err := t.SetResult(r); err != nil {
				return err
			}
		}
		return api.Events.Publish(t, "twin.turn", turnEvent{cfg.Tag, st.Turns})
	})

	api.Pipeline.Step(func(s *ganglion.Step) error {
		word, arg := command(s.InputText())
		if err := trace(s, "step", "enter"); err != nil {
			return err
		}
		switch {
		case word == "hide":
			var keep []string
			for _, name := range s.Tools() {
				if !contains(cfg.Hide, name) {
					keep = append(keep, name)
				}
			}
			if err := s.SetTools(keep); err != nil {
				return err
			}
		case word == "edit" && s.Index() == 1:
			last, err := s.Message(-1)
			if err != nil {
				return err
			}
			last.Content = "edited: " + last.Content
			if err := s.Emit(ganglion.MessageEvent{Type: ganglion.MessageReplace, TargetID: last.ID, Message: last}); err != nil {
				return err
			}
			first, err := s.Message(0)
			if err != nil {
				return err
			}
			if err := s.Emit(ganglion.MessageEvent{Type: ganglion.MessageRemove, TargetID: first.ID}); err != nil {
				return err
			}
		case word == "fail" && arg == "step":
			return errors.New(cfg.Tag + ": step failed on purpose")
		}
		if err := s.Next(); err != nil {
			return err
		}
		if word == "ask" && s.Index() == 1 {
			if _, err := s.Pause(ganglion.PendingItem{Kind: "twin_question", Request: questionRequest{cfg.Tag, "Which one?"}, Required: true}); err != nil {
				return err
			}
		}
		if word == "more" && s.Index() == 1 || word == "halt" {
			r, err := s.Result()
			if err != nil {
				return err
			}
			if word == "more" {
				r.Continue = true
			} else {
				r.Stop = ganglion.FinishMaxSteps
			}
			if err := s.SetResult(r); err != nil {
				return err
			}
		}
		return trace(s, "step", "leave")
	})

	api.Pipeline.ToolCall(func(c *ganglion.ToolCall) error {
		var args struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(c.Args(), &args) // malformed arguments have no mode
		if _, resumed := c.Resuming(); args.Mode == "ask" && !resumed {
			if _, err := c.Pause(ganglion.PendingItem{Kind: "twin_ask", Request: askRequest{cfg.Tag, c.Name()}, Required: true}); err != nil {
				return err
			}
			return c.SetResult(ganglion.ToolResult{Content: cfg.Tag + " waits for a human"})
		}
		if err := trace(c, "tool_call", "enter"); err != nil {
			return err
		}
		switch args.Mode {
		case "fail":
			return errors.New(cfg.Tag + ": tool call failed on purpose")
		case "args":
			b, err := json.Marshal(map[string]string{"text": "changed by " + cfg.Tag})
			if err != nil {
				return err
			}
			if err := c.SetArgs(b); err != nil {
				return err
			}
		}
		if err := c.Next(); err != nil {
			return err
		}
		if args.Mode == "replace" {
			r, err := c.Result()
			if err != nil {
				return err
			}
			if err := c.SetResult(ganglion.ToolResult{Content: cfg.Tag + " replaced: " + r.Content}); err != nil {
				return err
			}
		}
		return trace(c, "tool_call", "leave")
	})

	if cfg.Echo {
		if err := api.Tools.Register(echoSpec, echo); err != nil {
			return err
		}
	}

	// The guest cannot tell which agent an event belongs to: it records
	// every tool.finished it is given (see the suite's "events of another
	// agent" case).
	return api.Events.Subscribe("tool.finished", func(e *ganglion.Event) error {
		var data struct {
			Tool    string `json:"tool"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(e.Data(), &data); err != nil {
			return err
		}
		var st state
		if _, err := e.State(&st); err != nil {
			return err
		}
		st.Tools = append(st.Tools, data.Tool+": "+data.Content)
		return e.SetState(st)
	})
}

var echoSpec = ganglion.ToolSpec{
	Name:        "twin_echo",
	Description: "Echoes its text.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	Category:    ganglion.CategoryRead,
}

// echo is the tool twin_echo.
func echo(c *ganglion.ToolCall) (ganglion.ToolResult, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c.Args(), &args); err != nil {
		return ganglion.ToolResult{}, err
	}
	if args.Text == "" {
		return ganglion.ToolResult{}, errors.New("twin_echo: the text is empty")
	}
	if k := c.IdempotencyKey(); len(k) != 35 || k[:3] != "gk-" {
		return ganglion.ToolResult{}, errors.New("twin_echo: no idempotency key: " + k)
	}
	return ganglion.ToolResult{Content: cfg.Tag + " echoes " + args.Text}, nil
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

// registerPending registers the pending kinds twin_ask and twin_question.
func registerPending(api *ganglion.API) error {
	err := api.Pending.Handle(ganglion.PendingKind{
		Name: "twin_ask",
		Resolve: func(p *ganglion.PendingCall, act ganglion.Action) (ganglion.Outcome, error) {
			switch {
			case act.Kind == "answer" && act.Value == "yes":
				return ganglion.Outcome{Status: "answered", Answer: "yes", Message: cfg.Tag + ": approved"}, nil
			case act.Kind == "answer" && act.Value == "no":
				return ganglion.Outcome{Status: "rejected", Answer: "no", Message: cfg.Tag + ": denied"}, nil
			}
			return ganglion.Outcome{}, fmt.Errorf("%s: answer yes or no, not %q", cfg.Tag, act.Value)
		},
		Resume: func(r *ganglion.Resume) error {
			if r.Item().Answer != "yes" {
				return r.SetResult(ganglion.ToolResult{Content: cfg.Tag + ": the call was denied", IsError: true})
			}
			_, err := r.Run()
			return err
		},
	})
	if err != nil {
		return err
	}
	return api.Pending.Handle(ganglion.PendingKind{
		Name: "twin_question",
		Resolve: func(p *ganglion.PendingCall, act ganglion.Action) (ganglion.Outcome, error) {
			if act.Kind != "answer" {
				return ganglion.Outcome{}, errors.New(cfg.Tag + ": a question takes an answer")
			}
			if strings.TrimSpace(act.Value) == "" {
				return ganglion.Outcome{}, errors.New(cfg.Tag + ": the answer is empty")
			}
			return ganglion.Outcome{Status: "answered", Answer: act.Value, Message: cfg.Tag + " got: " + act.Value}, nil
		},
	})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func main() {}
