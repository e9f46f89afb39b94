package extensions_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestSDK runs testdata/sdkcheck, a guest that calls every part of the
// SDK against the real host: JSON shapes the host decodes strictly, buffer
// growth, error codes, panics, re-entry through next.
func TestSDK(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: a
    tools: [echo]
    extensions: [{wasm: "{{sdkcheck}}", secrets: [API_KEY]}]
`, `
agents:
  a:
    turns:
      - match: "^model-fails"
        steps:
          - error: "simulated provider failure"
    fallback:
      steps:
        - text: "model: {{ .Input }}"
`)
	echo := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "echo", Description: "Echoes."},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "echo"}, nil
		}}
	rt := s.open(runtime.WithTool(echo))
	big := "big " + strings.Repeat("x", 100_000)
	tests := []struct {
		name, input string
		want        string // the answer, or the failure's text with wantErr
		wantErr     bool
	}{
		{"plain", "hello", "model: hello", false},
		{"grows the buffer", big, "input 100004 bytes, event 100004 bytes, kind user_message", false},
		// A turn answered by a middleware keeps its input and answer (the
		// previous turn's); this turn's input joins the conversation after
		// the turn middleware.
		{"messages", "messages", `4 messages, first "hello", last "input 100004 bytes, event 100004 bytes, kind user_message", past the end: true`, false},
		{"emit", "emit", "model: emit", false},
		{"set input", "setinput please", "model: rewritten please", false},
		{"result", "wrap", "wrapped(model: wrap)", false},
		{"re-entry", "nested", "nested ok: model: nested", false},
		// The step's note is the last user message: the model's input.
		{"step tools", "tools", "model: step 1 of turn-8 offered [echo], then []", false},
		{"secret not provided", "secret", "secret: true", false},
		{"state not declared", "state", "state: true", false},
		{"next twice", "next-twice", "second next: true", false},
		{"goroutine", "goroutine", "goroutine saw 9 bytes", false},
		{"reread", "reread twice", `read "reread twice", after SetInput "rewritten twice", the step read "rewritten twice", after Next "rewritten twice"`, false},
		{"keep a context", "keep", "model: keep", false},
		{"stale context", "stale", "ganglion: field INPUT_TEXT: handle", true},
		{"hook error", "fail", "sdkcheck refuses", true},
		{"panic", "panic", "turn middleware: panic: assignment to entry in nil map", true},
		{"model failure passes through", "model-fails", "simulated provider failure", true},
		{"after failures", "still here", "model: still here", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(tt.input))
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Send(%.20q) = %v, want an error containing %q", tt.input, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Send(%.20q): %v", tt.input, err)
			}
			if res.Response.Content != tt.want {
				t.Errorf("Send(%.20q) = %q, want %q", tt.input, res.Response.Content, tt.want)
			}
		})
	}
	history, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	var notes, answers []string
	for _, m := range history {
		switch {
		case m.Source.Type != pipeline.SourceExtension:
		case m.Role == pipeline.RoleAssistant:
			answers = append(answers, m.Source.Extension+": "+m.Content)
		default:
			notes = append(notes, m.Source.Extension+": "+m.Content)
		}
	}
	wantNotes := []string{"sdkcheck: a note from sdkcheck", "sdkcheck: step 1 of turn-8 offered [echo], then []"}
	if !slices.Equal(notes, wantNotes) {
		t.Errorf("messages the guest emitted: %q, want %q", notes, wantNotes)
	}
	// The answers the guest gave (with SetResult, with or without Next)
	// are stored as its own.
	wantAnswers := []string{"sdkcheck: input 100004 bytes, event 100004 bytes, kind user_message",
		`sdkcheck: 4 messages, first "hello", last "input 100004 bytes, event 100004 bytes, kind user_message", past the end: true`,
		"sdkcheck: wrapped(model: wrap)", "sdkcheck: nested ok: model: nested", "sdkcheck: secret: true", "sdkcheck: state: true",
		"sdkcheck: second next: true", "sdkcheck: goroutine saw 9 bytes",
		`sdkcheck: read "reread twice", after SetInput "rewritten twice", the step read "rewritten twice", after Next "rewritten twice"`}
	if !slices.Equal(answers, wantAnswers) {
		t.Errorf("the guest's answers in the history: %q, want %q", answers, wantAnswers)
	}
}

// TestSDKFailureBlame checks who a failure is blamed on: the guest's own
// error is a GuestError; the model's failure handed back from Next is not.
func TestSDKFailureBlame(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: a
    extensions: [{wasm: "{{sdkcheck}}", secrets: [API_KEY]}]
`, `
agents:
  a:
    turns:
      - match: "^model-fails"
        steps:
          - error: "simulated provider failure"
    fallback:
      steps:
        - text: "ok"
`)
	rt := s.open()
	var ge *wasm.GuestError
	_, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("fail"))
	if !errors.As(err, &ge) {
		t.Errorf("the hook's own error %v is not a *wasm.GuestError", err)
	}
	_, err = rt.Send(context.Background(), "a", "k", runtime.UserMessage("model-fails"))
	if err == nil || errors.As(err, &ge) {
		t.Errorf("the model's failure came back as %v (%T), want it unblamed on the guest", err, err)
	}
}
