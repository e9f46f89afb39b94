package audit

import (
	"context"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the name the extension is registered under.
const Name = "audit"

// Settings are the extension's config.
type Settings struct {
	// LogArguments logs each call's arguments. Off by default: arguments can
	// carry secrets.
	LogArguments bool `yaml:"log_arguments"`
}

// Counts is the extension's state per instance.
type Counts struct {
	Turns      int64 `json:"turns"`
	ToolCalls  int64 `json:"tool_calls"`
	ToolErrors int64 `json:"tool_errors"`
}

// New is the extension's [extensions.Factory].
func New(cfg extensions.Config) (extensions.Extension, error) {
	var s Settings
	if err := cfg.Decode(&s); err != nil {
		return nil, err
	}
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(countTurn(api))
		api.Pipeline.ToolCall(logToolCall(api, s))
		return nil
	}), nil
}

// countTurn counts the turn and the tool results it added, with one state
// write per turn. It reads only the messages the turn appended.
func countTurn(api *extensions.API) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		conv := t.Conversation()
		before := conv.Len()
		res, err := t.Next(ctx)
		var c Counts
		if _, lerr := api.State.Load(ctx, t.InstanceKey(), &c); lerr != nil {
			api.Logger.Error("audit: state unreadable; counting from zero", "instance", t.InstanceKey(), "err", lerr)
		}
		c.Turns++
		for i := before; i < conv.Len(); i++ {
			if m := conv.At(i); m.Role == pipeline.RoleTool {
				c.ToolCalls++
				if m.IsError {
					c.ToolErrors++
				}
			}
		}
		if serr := api.State.Save(ctx, t.InstanceKey(), c); serr != nil && err == nil {
			return res, serr
		}
		return res, err
	}
}

func logToolCall(api *extensions.API, s Settings) pipeline.ToolCallFunc {
	return func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		start := time.Now()
		r, err := c.Next(ctx)
		attrs := []any{"instance", c.InstanceKey(), "turn", c.TurnID(), "tool", c.Name(), "call_id", c.CallID(), "duration", time.Since(start)}
		if s.LogArguments {
			attrs = append(attrs, "arguments", string(c.Arguments()))
		}
		switch {
		case err != nil:
			api.Logger.Warn("tool call failed", append(attrs, "err", err)...)
		case r.IsError:
			api.Logger.Info("tool call returned an error", append(attrs, "result", truncate(r.Content, 200))...)
		default:
			api.Logger.Info("tool call", append(attrs, "result_bytes", len(r.Content))...)
		}
		return r, err
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
