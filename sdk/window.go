package ganglion

import (
	"encoding/json"
	"fmt"
	"time"
)

// Window is the context window of a step's turn: the effective messages
// the model is sent at its next call (the conversation less what was left
// out or summarised), counted with the runtime's tokenizer, and the ways
// to make it smaller. It is the native middleware's pipeline.Window, for a
// step hook ([Step.Window]); an extension that manages the context
// (summarising old messages, dropping stale tool output) reads it before
// calling Next.
//
// Every method asks the host afresh, so what it returns reflects the
// changes made since. Size, ReservedOutput, Tokens and Sent have no error:
// a refusal panics (see the package doc's # Errors), which happens only
// when the Window is used outside its step hook.
type Window struct{ h int32 }

// WindowMessage is one effective message of a [Window].
type WindowMessage struct {
	Message Message `json:"message"`
	// Tokens is the message's count with the runtime's tokenizer.
	Tokens int `json:"tokens"`
	// Unit numbers the runs of messages that stay or go together: an
	// assistant message and the results of its tool calls share one.
	Unit int `json:"unit"`
	// Keep says the message must stay in the window: the first user
	// message (the task), the turn's input, the newest message, pinned
	// messages, and what an open pending item or delegation needs.
	Keep bool `json:"keep"`
	// Summary says the message summarises earlier ones.
	Summary bool `json:"summary"`
}

// windowJSON is the answer of the window import.
type windowJSON struct {
	Size           int             `json:"size"`
	ReservedOutput int             `json:"reserved_output"`
	Tokens         int             `json:"tokens"`
	Sent           int             `json:"sent"`
	Messages       []WindowMessage `json:"messages"`
}

// read reads the whole window.
func (w *Window) read() (windowJSON, error) {
	var v windowJSON
	b, err := read("window", func(b []byte) int32 { return host.window(w.h, b) })
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("ganglion: window: %w", err)
	}
	return v, nil
}

func (w *Window) mustRead() windowJSON {
	v, err := w.read()
	if err != nil {
		panic(err)
	}
	return v
}

// Size is the model's context window in tokens; 0 when the agent's config
// does not say.
func (w *Window) Size() int { return w.mustRead().Size }

// ReservedOutput is what of the window is kept for the answer (the model's
// max_output_tokens); 0 when the agent's config does not say.
func (w *Window) ReservedOutput() int { return w.mustRead().ReservedOutput }

// Messages returns the effective messages, oldest first, each with its
// token count and marks.
func (w *Window) Messages() ([]WindowMessage, error) {
	v, err := w.read()
	return v.Messages, err
}

// Tokens is what the next model call is sent, counted: the effective
// messages and the system prompt.
func (w *Window) Tokens() int { return w.mustRead().Tokens }

// Sent is Tokens as it was at the turn's latest model call, 0 before the
// first: what a provider's reported input usage is compared with.
func (w *Window) Sent() int { return w.mustRead().Sent }

// windowRequest is the request of the window_apply import.
type windowRequest struct {
	Op      string   `json:"op"`
	IDs     []string `json:"ids,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Keep    float64  `json:"keep,omitempty"`
	Summary *Message `json:"summary,omitempty"`
}

// apply sends a window_apply request and decodes the answer into out.
func (w *Window) apply(req windowRequest, out any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("ganglion: window_apply %s: %w", req.Op, err)
	}
	ans, err := read("window_apply "+req.Op, func(buf []byte) int32 { return host.windowApply(w.h, b, buf) })
	if err != nil {
		return err
	}
	if err := json.Unmarshal(ans, out); err != nil {
		return fmt.Errorf("ganglion: window_apply %s: %w", req.Op, err)
	}
	return nil
}

// Truncate leaves the messages ids out of what the model is sent (they
// stay in the conversation, marked) and publishes context.truncated with
// reason. It refuses ([ErrFailed]), changing nothing, a message that is
// not in the window, one marked Keep, and a set that splits a Unit.
func (w *Window) Truncate(ids []string, reason string) error {
	var out struct{}
	return w.apply(windowRequest{Op: "truncate", IDs: ids, Reason: reason}, &out)
}

// Reduce truncates the oldest units until at most the share keep
// (0 < keep < 1) of the effective messages remain, skipping those that
// must stay: the reduction the runtime itself makes when a provider says
// the context is too long. It returns the message counts before and after.
func (w *Window) Reduce(keep float64, reason string) (before, after int, err error) {
	var out struct {
		Before int `json:"before"`
		After  int `json:"after"`
	}
	err = w.apply(windowRequest{Op: "reduce", Keep: keep, Reason: reason}, &out)
	return out.Before, out.After, err
}

// Condense appends summary to the conversation and shows it in place of
// the messages ids, which leave the window; the summary must stay for the
// rest of the turn. A summary without a Role is the user's, without a
// Source the extension's. It returns the summary's ID, and refuses the
// sets Truncate refuses.
func (w *Window) Condense(ids []string, summary Message) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := w.apply(windowRequest{Op: "condense", IDs: ids, Summary: &summary}, &out)
	return out.ID, err
}

// Window returns the context window of the step's turn.
func (s *Step) Window() *Window { return &Window{s.h} }

// Models calls a model outside the conversation, for a step hook
// ([Step.Models]): what it is sent and answers is not in the history, and
// its usage is charged to the turn. The manifest must declare
// [Manifest].Models. A guest calls the agent's own model only.
type Models struct{ h int32 }

// CompletionRequest is a model call of a step hook.
type CompletionRequest struct {
	// Model is the model to call: "" for the agent's own, the only one a
	// WebAssembly extension may name for now.
	Model    string    `json:"model,omitempty"`
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// MaxOutputTokens bounds the answer; 0: the model's setting.
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// Timeout bounds the call; 0: the host's default (60 s). The hook's own
	// deadline does not run while the model works.
	Timeout time.Duration `json:"-"`
}

// Completion is the answer to a [CompletionRequest].
type Completion struct {
	Text  string `json:"text"`
	Usage Usage  `json:"usage"`
}

// Usage counts a model call's tokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Complete sends req and returns the model's text answer. A hook call may
// make at most 16 model calls (sdk/ABI.md, "Limits").
func (m *Models) Complete(req CompletionRequest) (Completion, error) {
	type wire struct {
		CompletionRequest
		TimeoutMS int64 `json:"timeout_ms,omitempty"`
	}
	b, err := json.Marshal(wire{req, req.Timeout.Milliseconds()})
	if err != nil {
		return Completion{}, fmt.Errorf("ganglion: complete: %w", err)
	}
	ans, err := read("complete", func(buf []byte) int32 { return host.complete(m.h, b, buf) })
	if err != nil {
		return Completion{}, err
	}
	var c Completion
	if err := json.Unmarshal(ans, &c); err != nil {
		return Completion{}, fmt.Errorf("ganglion: complete: %w", err)
	}
	return c, nil
}

// Models returns what calls models for the step's hook.
func (s *Step) Models() *Models { return &Models{s.h} }
