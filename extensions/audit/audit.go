package audit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the name the extension is registered under.
const Name = "audit"

// settings are the extension's config.
type settings struct {
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
	var s settings
	if err := cfg.Decode(&s); err != nil {
		return nil, err
	}
	return extensions.Func(func(api *extensions.API) error {
		a := &auditor{api: api, settings: s}
		api.Pipeline.Turn(a.turn)
		api.Pipeline.ToolCall(a.toolCall)
		return nil
	}), nil
}

// auditor is the extension loaded for one agent.
type auditor struct {
	api      *extensions.API
	settings settings
	running  sync.Map // instance + "\x00" + turn ID → *turnCounts
}

// turnCounts are the tool calls of a running turn, counted by the toolCall
// layer (possibly concurrently) and saved once by the turn layer.
type turnCounts struct{ calls, errors atomic.Int64 }

func runningKey(instance, turnID string) string { return instance + "\x00" + turnID }

// turn counts the turn and its tool calls, with one state write per turn.
func (a *auditor) turn(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
	key := runningKey(t.InstanceKey(), t.TurnID())
	tc := new(turnCounts)
	a.running.Store(key, tc)
	res, err := t.Next(ctx)
	a.running.Delete(key)

	// A cancelled turn still happened: count it whatever ctx says.
	sctx := context.WithoutCancel(ctx)
	raw, gerr := a.api.State.Get(sctx, t.InstanceKey())
	if gerr != nil {
		// Leave the stored counts alone rather than overwrite them from zero.
		a.api.Logger.Error("audit: cannot read state; turn not counted", "instance", t.InstanceKey(), "turn", t.TurnID(), "err", gerr)
		return res, errors.Join(err, gerr)
	}
	var c Counts
	if raw != nil {
		if derr := json.Unmarshal(raw, &c); derr != nil {
			a.api.Logger.Error("audit: state unreadable; counting from zero", "instance", t.InstanceKey(), "err", derr)
			c = Counts{}
		}
	}
	c.Turns++
	c.ToolCalls += tc.calls.Load()
	c.ToolErrors += tc.errors.Load()
	if serr := a.api.State.Save(sctx, t.InstanceKey(), c); serr != nil {
		return res, errors.Join(err, serr)
	}
	return res, err
}

// toolCall logs the call and counts it for its turn.
func (a *auditor) toolCall(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	start := time.Now()
	r, err := c.Next(ctx)
	failed := err != nil || r.IsError
	if v, ok := a.running.Load(runningKey(c.InstanceKey(), c.TurnID())); ok {
		tc := v.(*turnCounts)
		tc.calls.Add(1)
		if failed {
			tc.errors.Add(1)
		}
	}
	attrs := []any{"instance", c.InstanceKey(), "turn", c.TurnID(), "tool", c.Name(), "call_id", c.CallID(), "duration", time.Since(start)}
	if a.settings.LogArguments {
		attrs = append(attrs, "arguments", string(c.Arguments()))
	}
	switch {
	case err != nil:
		a.api.Logger.Warn("tool call failed", append(attrs, "err", err)...)
		return r, err
	case r.IsError:
		a.api.Logger.Info("tool call returned an error", append(attrs, "result_bytes", len(r.Content))...)
	default:
		a.api.Logger.Info("tool call", append(attrs, "result_bytes", len(r.Content))...)
	}
	// What a tool says is no business of the default log: it may quote
	// files, environments, anything. The runtime has masked provided
	// secrets in it already; an operator who asks for debug logs gets its
	// beginning.
	if a.api.Logger.Enabled(ctx, slog.LevelDebug) {
		a.api.Logger.Debug("tool call result", "instance", c.InstanceKey(), "turn", c.TurnID(), "tool", c.Name(), "call_id", c.CallID(),
			"is_error", r.IsError, "result", truncate(r.Content, maxExcerpt))
	}
	return r, nil
}

// maxExcerpt is how much of a result the debug log shows, in bytes.
const maxExcerpt = 200

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
