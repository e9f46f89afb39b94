// Command gowindow is a Go guest that manages the context window, for the
// tests of the window, window_apply and complete imports (window_test.go).
// Its step hook acts on the turn's input:
//
//   - "condense ...": in the turn's first step, it summarises the window's
//     free units (neither kept nor a summary) with the agent's model and
//     condenses them into the summary, then calls next.
//   - "keep": it condenses the window's first message, which must stay,
//     and fails with the host's refusal.
//   - "othermodel": it calls a model other than the agent's, and fails
//     with the host's refusal.
//   - "reserved emit" and "reserved summary": it appends a message, or
//     condenses the window's second message into a summary, with metadata
//     the runtime reserves, and fails with the host's refusal.
//
// Any other input goes on to next.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gowindow.wasm .
package main

import (
	"errors"
	"fmt"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

func init() {
	ganglion.Register(ganglion.Manifest{Name: "gowindow", Version: "1.0.0", Models: true}, func(api *ganglion.API) error {
		api.Pipeline.Step(step)
		return nil
	})
}

func step(s *ganglion.Step) error {
	in := s.InputText()
	switch {
	case strings.HasPrefix(in, "condense") && s.Index() == 1:
		if err := condense(s); err != nil {
			return err
		}
	case in == "keep":
		msgs, err := s.Window().Messages()
		if err != nil {
			return err
		}
		_, err = s.Window().Condense([]string{msgs[0].Message.ID}, ganglion.Message{Content: "nothing"})
		return err
	case in == "reserved emit":
		return s.Emit(ganglion.MessageEvent{Type: ganglion.MessageAppend,
			Message: ganglion.Message{Role: ganglion.RoleUser, Content: "hidden", Metadata: map[string]any{"truncated": true}}})
	case in == "reserved summary":
		msgs, err := s.Window().Messages()
		if err != nil {
			return err
		}
		_, err = s.Window().Condense([]string{msgs[1].Message.ID}, ganglion.Message{Content: "nothing", Metadata: map[string]any{"awaits": "p_1"}})
		return err
	case in == "othermodel":
		_, err := s.Models().Complete(ganglion.CompletionRequest{Model: "summariser", Messages: []ganglion.Message{{Role: ganglion.RoleUser, Content: "hi"}}})
		return err
	}
	return s.Next()
}

// condense replaces the free units of the window with a summary the
// agent's model writes.
func condense(s *ganglion.Step) error {
	w := s.Window()
	msgs, err := w.Messages()
	if err != nil {
		return err
	}
	// A unit leaves whole or not at all: skip those with a kept message.
	held := map[int]bool{}
	for _, m := range msgs {
		if m.Keep || m.Summary {
			held[m.Unit] = true
		}
	}
	var ids []string
	var transcript strings.Builder
	for _, m := range msgs {
		if held[m.Unit] {
			continue
		}
		ids = append(ids, m.Message.ID)
		fmt.Fprintf(&transcript, "%s: %s\n", m.Message.Role, m.Message.Content)
	}
	if len(ids) < 2 {
		return nil
	}
	c, err := s.Models().Complete(ganglion.CompletionRequest{System: "Summarise the conversation.",
		Messages: []ganglion.Message{{Role: ganglion.RoleUser, Content: "Summarise:\n" + transcript.String()}}})
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.Text) == "" {
		return errors.New("the model wrote no summary")
	}
	_, err = w.Condense(ids, ganglion.Message{Content: "[Summary] " + c.Text})
	return err
}

func main() {}
