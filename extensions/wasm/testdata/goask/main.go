// Command goask is a Go guest that pauses its turn for a human, for the
// tests of pending items from a guest (pause_test.go). It is an approval
// gate and a question protocol in one:
//
//   - a toolCall hook pauses every call of the tool "danger" with an item
//     of kind "ask", unless the call runs because its own item resumed it;
//     the kind's Resume runs an approved call (with a human's edit, if any)
//     or gives a denied one its result;
//   - a reply hook pauses the turn with an item of kind "question", stored
//     with the model's reply, when the reply holds "[ASK] question"; the
//     answer becomes the resume turn's input.
//
// It registers the tool "danger" itself, which answers with its arguments.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o goask.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

func init() {
	ganglion.Register(ganglion.Manifest{Name: "goask", Version: "1.0.0"}, func(api *ganglion.API) error {
		if err := api.Pending.Handle(ganglion.PendingKind{Name: "ask", Resolve: resolveAsk, Expire: expireAsk, Resume: resumeAsk}); err != nil {
			return err
		}
		if err := api.Pending.Handle(ganglion.PendingKind{Name: "question", Resolve: resolveQuestion}); err != nil {
			return err
		}
		api.Pipeline.ToolCall(guard)
		api.Pipeline.Reply(reply)
		return api.Tools.Register(ganglion.ToolSpec{Name: "danger", Description: "does something a human must approve",
			Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)},
			func(c *ganglion.ToolCall) (ganglion.ToolResult, error) {
				return ganglion.ToolResult{Content: "danger ran with " + string(c.Args())}, nil
			})
	})
}

type askRequest struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

func guard(c *ganglion.ToolCall) error {
	if c.Name() != "danger" {
		return c.Next()
	}
	if _, ok := c.Resuming(); ok {
		return c.Next()
	}
	id, err := c.Pause(ganglion.PendingItem{Kind: "ask", Request: askRequest{Tool: c.Name(), Args: c.Args()}, Required: true, Timeout: time.Hour})
	if err != nil {
		return err
	}
	return c.SetResult(ganglion.ToolResult{Content: "waiting for approval " + id})
}

func resolveAsk(p *ganglion.PendingCall, act ganglion.Action) (ganglion.Outcome, error) {
	switch {
	case act.Kind == "edit":
		return ganglion.Outcome{Status: "answered", Answer: "edit:" + act.Value, Message: "A human edited the call."}, nil
	case act.Kind == "answer" && act.Value == "approve":
		return ganglion.Outcome{Status: "answered", Answer: "approve", Message: "A human approved the call."}, nil
	case act.Kind == "answer" && act.Value == "deny", act.Kind == "reject":
		return ganglion.Outcome{Status: "rejected", Answer: "deny", Reason: act.Reason, Message: "A human denied the call."}, nil
	}
	return ganglion.Outcome{}, fmt.Errorf("answer approve or deny, not %q", act.Value)
}

func expireAsk(p *ganglion.PendingCall) (ganglion.Outcome, error) {
	return ganglion.Outcome{Status: "timeout", Answer: "deny", Message: "Nobody approved the call in time."}, nil
}

func resumeAsk(r *ganglion.Resume) error {
	it := r.Item()
	if args, ok := strings.CutPrefix(it.Answer, "edit:"); ok {
		_, err := r.RunWith(json.RawMessage(args))
		return err
	}
	if it.Answer == "approve" {
		_, err := r.Run()
		return err
	}
	return r.SetResult(ganglion.ToolResult{Content: "tool call denied by goask", IsError: true})
}

func reply(r *ganglion.Reply) error {
	m, err := r.Message()
	if err != nil {
		return err
	}
	_, q, ok := strings.Cut(m.Content, "[ASK]")
	if !ok {
		return nil
	}
	_, err = r.Pause(ganglion.PendingItem{Kind: "question", Request: map[string]string{"question": strings.TrimSpace(q)}, Required: true})
	return err
}

func resolveQuestion(p *ganglion.PendingCall, act ganglion.Action) (ganglion.Outcome, error) {
	if act.Kind != "answer" {
		return ganglion.Outcome{}, errors.New("a question takes an answer")
	}
	if strings.TrimSpace(act.Value) == "" {
		return ganglion.Outcome{}, errors.New("the answer is empty")
	}
	var req struct {
		Question string `json:"question"`
	}
	if err := json.Unmarshal(p.Item().Request, &req); err != nil {
		return ganglion.Outcome{}, err
	}
	return ganglion.Outcome{Status: "answered", Answer: act.Value, Message: fmt.Sprintf("The human answered %q: %s", req.Question, act.Value)}, nil
}

func main() {}
