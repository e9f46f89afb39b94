package condense

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the name the extension is registered under.
const Name = "condense"

// The defaults of the settings.
const (
	defaultBuffer     = 0.10
	defaultMinMsgs    = 5
	defaultKeep       = 0.75
	defaultKeepRecent = 2
	defaultTimeout    = 60 * time.Second
	excerptCharsMax   = 4000 // of one message in the summariser's transcript
)

// settings is the extension's config.
type settings struct {
	// Summariser is who writes summaries: "self" (the agent's own model,
	// default), "model" (Model) or "agent" (Agent, through ctx.agents).
	Summariser string `yaml:"summariser"`
	// Model is opened by the runtime (extensions.Models.Open), which
	// checks its fields; here it is only seen to be there.
	Model map[string]any `yaml:"model"`
	Agent string         `yaml:"agent"`
	// ContextWindow overrides the model's context_window.
	ContextWindow int `yaml:"context_window"`
	// Buffer is the share of the window kept free; default 10 %.
	Buffer *float64 `yaml:"buffer"`
	// MinMessages is the fewest messages worth a summary; default 5.
	MinMessages int `yaml:"min_messages"`
	// Keep is the share of the messages truncation keeps; default 75 %.
	Keep *float64 `yaml:"keep"`
	// KeepRecent is how many of the newest messages are never summarised;
	// default 2.
	KeepRecent *int `yaml:"keep_recent"`
	// Timeout bounds a summary; default 60s.
	Timeout string `yaml:"timeout"`
}

// condenser is the extension, loaded for one agent.
type condenser struct {
	api        *extensions.API
	summariser string
	agent      string // summariser "agent"
	model      string // summariser "model": the name Models.Open gave it
	window     int    // 0: the agent's model's
	buffer     float64
	minMsgs    int
	keep       float64
	keepRecent int
	timeout    time.Duration

	mu  sync.Mutex
	obs map[string]observation // by instance key: the last call's reported size
}

// observation is what the provider said the last prompt cost, next to what
// the runtime counted for it: the ratio corrects the local count.
type observation struct {
	reported, counted int
}

// New is the extension's factory: it checks the settings.
func New(cfg extensions.Config) (extensions.Extension, error) {
	var s settings
	if cfg != nil {
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
	}
	c := &condenser{summariser: s.Summariser, agent: s.Agent, window: s.ContextWindow, buffer: defaultBuffer,
		minMsgs: defaultMinMsgs, keep: defaultKeep, keepRecent: defaultKeepRecent, timeout: defaultTimeout, obs: map[string]observation{}}
	if c.summariser == "" {
		c.summariser = "self"
	}
	switch c.summariser {
	case "self":
	case "agent":
		if s.Agent == "" {
			return nil, errors.New(`summariser "agent" needs agent: the agent that writes summaries`)
		}
	case "model":
		if s.Model == nil || s.Model["provider"] == nil {
			return nil, errors.New(`summariser "model" needs model: {provider: ..., name: ...}`)
		}
	default:
		return nil, fmt.Errorf("summariser must be self, model or agent, got %q", s.Summariser)
	}
	if s.ContextWindow < 0 {
		return nil, fmt.Errorf("context_window must not be negative, got %d", s.ContextWindow)
	}
	if s.Buffer != nil {
		if *s.Buffer < 0 || *s.Buffer >= 1 {
			return nil, fmt.Errorf("buffer must be a share from 0 to below 1, got %v", *s.Buffer)
		}
		c.buffer = *s.Buffer
	}
	if s.MinMessages < 0 {
		return nil, fmt.Errorf("min_messages must not be negative, got %d", s.MinMessages)
	} else if s.MinMessages > 0 {
		c.minMsgs = s.MinMessages
	}
	if s.Keep != nil {
		if *s.Keep <= 0 || *s.Keep >= 1 {
			return nil, fmt.Errorf("keep must be a share above 0 and below 1, got %v", *s.Keep)
		}
		c.keep = *s.Keep
	}
	if s.KeepRecent != nil {
		if *s.KeepRecent < 0 {
			return nil, fmt.Errorf("keep_recent must not be negative, got %d", *s.KeepRecent)
		}
		c.keepRecent = *s.KeepRecent
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("timeout must be a positive duration such as 30s, got %q", s.Timeout)
		}
		c.timeout = d
	}
	return c, nil
}

// Register opens the summariser's model, if it has one of its own, and
// installs the step middleware.
func (c *condenser) Register(api *extensions.API) error {
	c.api = api
	switch c.summariser {
	case "agent":
		// The agents are built in config order: the summariser may come
		// later, so look among all the names.
		if !slices.Contains(api.AgentNames, c.agent) {
			return fmt.Errorf("summariser agent: unknown agent %q (agents: %s)", c.agent, strings.Join(api.AgentNames, ", "))
		}
	case "model":
		name, err := api.Models.Open("model")
		if err != nil {
			return fmt.Errorf("summariser model: %w", err)
		}
		c.model = name
	}
	api.Pipeline.Step(c.step)
	return nil
}

func (c *condenser) step(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	w := s.Window()
	if err := c.fit(ctx, s, w); err != nil {
		// The model call goes ahead; a context-window error, if it comes,
		// is handled by the runtime's own reduction.
		c.api.Logger.Warn("condensing the history failed", "instance", s.InstanceKey(), "turn", s.TurnID(), "err", err)
	}
	res, err := s.Next(ctx)
	// What was counted for the prompt the provider reports on: after a
	// reduction inside Next, that is the reduced one.
	counted := w.Sent()
	if err == nil && res != nil {
		if rep := int(res.Usage.InputTokens + res.Usage.CacheReadTokens + res.Usage.CacheWriteTokens); rep > 0 && counted > 0 {
			c.mu.Lock()
			c.obs[s.InstanceKey()] = observation{reported: rep, counted: counted}
			c.mu.Unlock()
		}
	}
	return res, err
}

// estimate corrects the window's count with the last reported one, by at
// most half or double.
func (c *condenser) estimate(s *pipeline.StepContext, w pipeline.Window) int {
	n := w.Tokens()
	c.mu.Lock()
	o, ok := c.obs[s.InstanceKey()]
	c.mu.Unlock()
	if !ok || o.counted == 0 {
		return n
	}
	ratio := min(max(float64(o.reported)/float64(o.counted), 0.5), 2)
	return int(float64(n) * ratio)
}

// limit is the token count above which the history is condensed: the
// window less the buffer and the reserved answer; 0 when the window is
// not known.
func (c *condenser) limit(w pipeline.Window) int {
	window := c.window
	if window == 0 {
		window = w.Size()
	}
	if window == 0 {
		return 0
	}
	return window - int(float64(window)*c.buffer) - w.ReservedOutput()
}

// fit condenses the window if it has grown past the limit: it summarises
// the messages since the last summary or, failing that, truncates the
// oldest.
func (c *condenser) fit(ctx context.Context, s *pipeline.StepContext, w pipeline.Window) error {
	limit := c.limit(w)
	if limit <= 0 {
		return nil
	}
	tokensBefore := c.estimate(s, w)
	if tokensBefore <= limit {
		return nil
	}
	reason, err := c.summarise(ctx, s, w, tokensBefore)
	if err == nil && reason == "" {
		if c.estimate(s, w) <= limit {
			return nil
		}
		reason = "still_over_limit"
	}
	if err != nil {
		c.api.Logger.Info("summary failed; truncating instead", "instance", s.InstanceKey(), "err", err)
		reason = "summary_failed"
	}
	_, _, rerr := w.Reduce(c.keep, reason)
	return rerr
}

// summarise replaces the messages since the last summary, but the newest
// and those that must stay, with a summary. It returns a reason when it
// does not try (too few messages), or the summariser's error.
func (c *condenser) summarise(ctx context.Context, s *pipeline.StepContext, w pipeline.Window, tokensBefore int) (string, error) {
	msgs, err := w.Messages()
	if err != nil {
		return "", err
	}
	units := unitsOf(msgs)
	// Since the last summary: the units after the newest summary's.
	start := 0
	for i, u := range units {
		if u[0].Summary {
			start = i + 1
		}
	}
	// Never the newest keepRecent messages, counted in whole units.
	end := len(units)
	for recent := 0; end > start && recent < c.keepRecent; {
		end--
		recent += len(units[end])
	}
	var picked []pipeline.WindowMessage
	for _, u := range units[start:end] {
		if !u[0].Keep {
			picked = append(picked, u...)
		}
	}
	if len(picked) < c.minMsgs {
		return "too_few_messages", nil
	}
	sctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	text, err := c.write(sctx, s, transcript(picked))
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the summariser wrote nothing")
	}
	ids := make([]string, len(picked))
	for i, m := range picked {
		ids[i] = m.Message.ID
	}
	before := len(msgs)
	id, err := w.Condense(ids, pipeline.Message{Role: pipeline.RoleUser, Content: "[Summary of the earlier conversation]\n" + strings.TrimSpace(text),
		Source:   pipeline.Source{Type: pipeline.SourceExtension, Extension: c.api.Name},
		Metadata: map[string]any{pipeline.MetaSummary: map[string]any{"messages": len(ids), "by": c.summariser}}})
	if err != nil {
		return "", err
	}
	after := before - len(ids) + 1
	c.api.Events.PublishTurn(events.ContextCondensed, s.InstanceKey(), s.TurnID(), events.ContextCondensedData{
		Before: before, After: after, Condensed: len(ids), SummaryID: id, Summariser: c.summariser,
		TokensBefore: tokensBefore, TokensAfter: c.estimate(s, w)})
	return "", nil
}

// unitsOf groups the window's messages into its units, in the order of
// their first messages: a tool call's results join it even when another
// message stands between them.
func unitsOf(msgs []pipeline.WindowMessage) [][]pipeline.WindowMessage {
	var units [][]pipeline.WindowMessage
	index := map[int]int{} // Unit → position in units
	for _, m := range msgs {
		i, ok := index[m.Unit]
		if !ok {
			i = len(units)
			index[m.Unit] = i
			units = append(units, nil)
		}
		units[i] = append(units[i], m)
	}
	return units
}

// transcript renders the messages to summarise.
func transcript(msgs []pipeline.WindowMessage) string {
	var b strings.Builder
	for _, wm := range msgs {
		m := &wm.Message
		text := m.Content
		if r := []rune(text); len(r) > excerptCharsMax {
			text = string(r[:excerptCharsMax]) + " […]"
		}
		switch {
		case m.Role == pipeline.RoleTool:
			fmt.Fprintf(&b, "[result of %s]\n%s\n\n", m.Name, text)
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, text)
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[calls %s %s]\n", tc.Name, tc.Arguments)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// summaryPrompt is the summariser's instruction.
const summaryPrompt = "Summarise the conversation below for the assistant who will continue it. " +
	"Keep the user's goals and conditions, decisions made, facts found (file paths, names, numbers), " +
	"what was tried and failed, and what remains to do. Be concise and factual; invent nothing."

// write has the summariser summarise transcript.
func (c *condenser) write(ctx context.Context, s *pipeline.StepContext, transcript string) (string, error) {
	if c.summariser == "agent" {
		return s.Agents().Request(ctx, c.agent, summaryPrompt+"\n\n"+transcript, pipeline.AgentCallOptions{Timeout: c.timeout,
			Metadata: map[string]any{"purpose": "summary"}})
	}
	out, err := s.Models().Complete(ctx, pipeline.CompletionRequest{Model: c.model, System: summaryPrompt,
		Messages: []pipeline.Message{{Role: pipeline.RoleUser, Content: transcript}}})
	return out.Text, err
}
