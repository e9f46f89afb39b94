// Command sdkcheck is a guest that exercises the Go SDK against the real
// host, for sdk_test.go: each turn's input names a check, and the turn's
// answer (or failure) says how it went. It is no example to follow.
package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

func init() {
	ganglion.Register(ganglion.Manifest{Name: "sdkcheck", Version: "0.0.1", Secrets: []string{"API_KEY"}}, setup)
}

// kept is a context kept past its hook, to check that the host refuses it.
var kept *ganglion.Turn

// stepMode tells the step middleware what the running turn checks.
var stepMode string

// stepRead is the input text the step middleware read, for "reread".
var stepRead string

func answer(t *ganglion.Turn, format string, args ...any) error {
	return t.SetResult(ganglion.TurnResult{FinishReason: ganglion.FinishText,
		Response: ganglion.Message{Content: fmt.Sprintf(format, args...)}})
}

func setup(api *ganglion.API) error {
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		in := t.InputText()
		cmd, arg, _ := strings.Cut(in, " ")
		stepMode = cmd
		switch cmd {
		case "panic":
			var m map[string]int
			m["boom"]++ // a runtime error, recovered by the SDK
		case "big":
			// An input far over the SDK's first buffer.
			return answer(t, "input %d bytes, event %d bytes, kind %s", len(in), len(t.Input().Text), t.Input().Kind)
		case "messages":
			last, err := t.Message(-1)
			if err != nil {
				return err
			}
			first, err := t.Message(0)
			if err != nil {
				return err
			}
			_, err = t.Message(t.Messages())
			return answer(t, "%d messages, first %q, last %q, past the end: %v", t.Messages(), first.Content, last.Content, errors.Is(err, ganglion.ErrNotFound))
		case "emit":
			if err := t.Emit(ganglion.MessageEvent{Type: ganglion.MessageAppend,
				Message: ganglion.Message{Role: ganglion.RoleUser, Content: "a note from sdkcheck"}}); err != nil {
				return err
			}
		case "setinput":
			if err := t.SetInput(ganglion.InputEvent{Kind: ganglion.InputUserMessage, Text: "rewritten " + arg}); err != nil {
				return err
			}
		case "wrap":
			if err := t.Next(); err != nil {
				return err
			}
			r, err := t.Result()
			if err != nil {
				return err
			}
			r.Response.Content = "wrapped(" + r.Response.Content + ")"
			return t.SetResult(r)
		case "nested":
			// Live values on the stack across Next, while the step
			// middleware below grows the stack and collects garbage.
			var local [64]int
			for i := range local {
				local[i] = i * i
			}
			if err := t.Next(); err != nil {
				return err
			}
			for i := range local {
				if local[i] != i*i {
					return fmt.Errorf("local[%d] = %d after Next", i, local[i])
				}
			}
			r, err := t.Result()
			if err != nil {
				return err
			}
			return answer(t, "nested ok: %s", r.Response.Content)
		case "secret":
			_, err := t.Secret("API_KEY")
			return answer(t, "secret: %v", errors.Is(err, ganglion.ErrNotFound))
		case "state":
			_, err := t.State(new(int))
			return answer(t, "state: %v", errors.Is(err, ganglion.ErrDenied))
		case "next-twice":
			if err := t.Next(); err != nil {
				return err
			}
			err := t.Next()
			return answer(t, "second next: %v", errors.Is(err, ganglion.ErrPhase))
		case "keep":
			kept = t
		case "stale":
			return answer(t, "%s", kept.InputText()) // panics: the host refuses the old handle
		case "goroutine":
			// A goroutine runs while the hook waits for it.
			done := make(chan int)
			go func() { done <- len(t.InputText()) }()
			return answer(t, "goroutine saw %d bytes", <-done)
		case "fail":
			return errors.New("sdkcheck refuses")
		case "reread":
			// The input read again after each thing that may change it:
			// the SDK keeps a text it read while the host's inbox says it
			// holds (sdk/ABI.md, "inbox").
			if err := t.SetInput(ganglion.InputEvent{Kind: ganglion.InputUserMessage, Text: "rewritten " + arg}); err != nil {
				return err
			}
			set := t.InputText()
			if err := t.Next(); err != nil {
				return err
			}
			return answer(t, "read %q, after SetInput %q, the step read %q, after Next %q", in, set, stepRead, t.InputText())
		}
		return t.Next()
	})
	api.Pipeline.Step(func(s *ganglion.Step) error {
		switch stepMode {
		case "reread":
			stepRead = s.InputText()
		case "nested":
			if d := depth(2000); d != 2000 {
				return fmt.Errorf("depth %d", d)
			}
			runtime.GC()
		case "tools":
			names := s.Tools()
			if err := s.SetTools(nil); err != nil {
				return err
			}
			if err := s.Emit(ganglion.MessageEvent{Type: ganglion.MessageAppend, Message: ganglion.Message{
				Role: ganglion.RoleUser, Content: fmt.Sprintf("step %d of %s offered %v, then %v", s.Index(), s.TurnID(), names, s.Tools())}}); err != nil {
				return err
			}
		}
		return s.Next()
	})
	return nil
}

// depth recurses n levels with a frame big enough to grow the stack.
func depth(n int) int {
	var pad [256]byte
	pad[n%256] = 1
	if n == 0 {
		return int(pad[0]) - 1
	}
	return depth(n-1) + int(pad[n%256])
}

func main() {}
