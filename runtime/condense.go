package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tiktoken-go/tokenizer"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// CondenseName is the name of the built-in condensation extension.
const CondenseName = "condense"

// Defaults of the condense extension.
const (
	DefaultCondenseBuffer  = 0.10
	DefaultMinSummarised   = 5
	DefaultKeepRecent      = 2
	DefaultSummaryTimeout  = 60 * time.Second
	summaryExcerptCharsMax = 4000
)

// condenseSettings is the condense extension's config.
type condenseSettings struct {
	// Summariser is who writes summaries: "self" (the agent's own model,
	// default), "model" (Model) or "agent" (Agent, through ctx.agents).
	Summariser string        `yaml:"summariser"`
	Model      *config.Model `yaml:"model"`
	Agent      string        `yaml:"agent"`
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

// condenser is the condense extension of one agent: a step middleware
// that, before each model call, counts the tokens of the effective
// history and, when they pass the window less the buffer and the
// reserved answer, summarises the messages since the last summary or,
// failing that, truncates the oldest.
type condenser struct {
	rt         *Runtime
	api        *extensions.API
	summariser string
	agent      string
	model      model.Provider // summariser: model
	window     int            // 0: the agent's model's
	buffer     float64
	minMsgs    int
	keep       float64
	keepRecent int
	timeout    time.Duration

	mu  sync.Mutex
	obs map[string]observation // by instance key: the last call's reported size

	sysTokens atomic.Int64 // the system prompt's count plus one; 0 until counted
}

// observation is what the provider said the last prompt cost, next to what
// the runtime counted for it: the ratio corrects the local count.
type observation struct {
	reported, counted int
}

// tokenCodec is the tokenizer the runtime counts with: cl100k_base,
// embedded in the binary (github.com/tiktoken-go/tokenizer), so counting
// works offline. Other models' tokenizers differ by some percent; the
// reported usage corrects for it.
var tokenCodec = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(tokenizer.Cl100kBase) })

// countTokens counts a message the way chat APIs bill it, near enough: its
// content, its tool calls' names and arguments, and a few tokens of
// framing.
func countTokens(m *pipeline.Message) int {
	enc, err := tokenCodec()
	if err != nil {
		return len(m.Content)/4 + 4
	}
	n := 4
	count := func(s string) {
		if s == "" {
			return
		}
		if c, err := enc.Count(s); err == nil {
			n += c
		} else {
			n += len(s) / 4
		}
	}
	count(m.Content)
	for _, c := range m.ToolCalls {
		count(c.Name)
		count(string(c.Arguments))
		n += 3
	}
	return n
}

// condenseFactory returns the condense extension's factory for runtime r
// (set once New has made it) and the model providers of o.
func condenseFactory(r **Runtime, o *options) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		var s condenseSettings
		if cfg != nil {
			if err := cfg.Decode(&s); err != nil {
				return nil, err
			}
		}
		c := &condenser{rt: *r, summariser: s.Summariser, agent: s.Agent, window: s.ContextWindow, buffer: DefaultCondenseBuffer,
			minMsgs: DefaultMinSummarised, keep: ForcedKeep, keepRecent: DefaultKeepRecent, timeout: DefaultSummaryTimeout, obs: map[string]observation{}}
		if c.summariser == "" {
			c.summariser = "self"
		}
		switch c.summariser {
		case "self":
		case "agent":
			if s.Agent == "" {
				return nil, errors.New(`summariser "agent" needs agent: the agent that writes summaries`)
			}
			// The agents are built in config order: the summariser may
			// come later, so look in the config, not among those built.
			if !slices.Contains(c.rt.agents.names, s.Agent) {
				return nil, fmt.Errorf("summariser agent: %w %q (agents: %s)", ErrUnknownAgent, s.Agent, strings.Join(c.rt.agents.names, ", "))
			}
		case "model":
			if s.Model == nil || s.Model.Provider == "" {
				return nil, errors.New(`summariser "model" needs model: {provider: ..., name: ...}`)
			}
			f, ok := o.providers[s.Model.Provider]
			if !ok {
				return nil, fmt.Errorf("summariser model: unknown provider %q", s.Model.Provider)
			}
			p, err := f(*s.Model)
			if err != nil {
				return nil, fmt.Errorf("summariser model: %w", err)
			}
			c.model = p
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
}

// Register installs the step middleware.
func (c *condenser) Register(api *extensions.API) error {
	c.api = api
	api.Pipeline.Step(c.step)
	return nil
}

func (c *condenser) step(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	ts, ok := s.Host().(*turnState)
	if !ok {
		return s.Next(ctx)
	}
	ts.inst.hist.setCounter(countTokens)
	if err := c.fit(ctx, ts, s); err != nil {
		// The model call goes ahead; a context-window error, if it comes,
		// is handled by the forced reduction.
		c.api.Logger.Warn("condensing the history failed", "instance", ts.inst.key, "turn", ts.turnID, "err", err)
	}
	res, err := s.Next(ctx)
	// What was counted for the prompt the provider reports on: after a
	// forced reduction inside Next, that is the reduced one.
	counted := ts.sentTokens + c.systemTokens(ts)
	if err == nil && res != nil {
		if rep := int(res.Usage.InputTokens + res.Usage.CacheReadTokens + res.Usage.CacheWriteTokens); rep > 0 && counted > 0 {
			c.mu.Lock()
			c.obs[ts.inst.key] = observation{reported: rep, counted: counted}
			c.mu.Unlock()
		}
	}
	return res, err
}

// counted is the local count of what the model is sent: the effective
// history and the system prompt.
func (c *condenser) counted(ts *turnState) int {
	return ts.inst.hist.effective().tokens + c.systemTokens(ts)
}

// systemTokens counts the agent's system prompt, once: it does not change,
// and counting costs microseconds per step.
func (c *condenser) systemTokens(ts *turnState) int {
	if n := c.sysTokens.Load(); n > 0 {
		return int(n - 1)
	}
	n := 0
	if ts.agent.system != "" {
		n = countTokens(&pipeline.Message{Content: ts.agent.system})
	}
	c.sysTokens.Store(int64(n) + 1)
	return n
}

// estimate corrects the local count with the last reported one.
func (c *condenser) estimate(ts *turnState) int {
	n := c.counted(ts)
	c.mu.Lock()
	o, ok := c.obs[ts.inst.key]
	c.mu.Unlock()
	if !ok || o.counted == 0 {
		return n
	}
	ratio := min(max(float64(o.reported)/float64(o.counted), 0.5), 2)
	return int(float64(n) * ratio)
}

// limit is the token count above which the history is condensed.
func (c *condenser) limit(a *agent) int {
	window := c.window
	if window == 0 {
		window = a.contextWindow
	}
	if window == 0 {
		return 0
	}
	return window - int(float64(window)*c.buffer) - a.maxOutput
}

// fit condenses the effective history if it has grown past the limit.
func (c *condenser) fit(ctx context.Context, ts *turnState, s *pipeline.StepContext) error {
	a := ts.agent
	limit := c.limit(a)
	if limit <= 0 {
		return nil
	}
	tokensBefore := c.estimate(ts)
	if tokensBefore <= limit {
		return nil
	}
	reason, err := c.summarise(ctx, ts, s, tokensBefore)
	if err == nil && reason == "" {
		if c.estimate(ts) <= limit {
			return nil
		}
		reason = "still_over_limit"
	}
	if err != nil {
		c.api.Logger.Info("summary failed; truncating instead", "instance", ts.inst.key, "err", err)
		reason = "summary_failed"
	}
	_, _, rerr := a.reduce(ts, c.keep, reason)
	return rerr
}

// summarise replaces the messages since the last summary, but the newest
// and those that must stay, with a summary. It returns a reason when it
// does not try (too few messages), or the summariser's error.
func (c *condenser) summarise(ctx context.Context, ts *turnState, s *pipeline.StepContext, tokensBefore int) (string, error) {
	a := ts.agent
	units, err := a.units(ts)
	if err != nil {
		return "", err
	}
	h := &ts.inst.hist
	// Since the last summary: units after the newest summary.
	start := 0
	for i, u := range units {
		if isSummary(h.at(u.pos[0]).msg) {
			start = i + 1
		}
	}
	end := len(units)
	for recent := 0; end > start && recent < c.keepRecent; {
		end--
		recent += len(units[end].pos)
	}
	var pos []int
	for _, u := range units[start:end] {
		if !u.keep {
			pos = append(pos, u.pos...)
		}
	}
	if len(pos) < c.minMsgs {
		return "too_few_messages", nil
	}
	transcript := c.transcript(h, pos)
	sctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	text, err := c.write(sctx, ts, s, transcript)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the summariser wrote nothing")
	}
	before := len(h.effective().idx)
	sum := pipeline.Message{Role: pipeline.RoleUser, Content: "[Summary of the earlier conversation]\n" + strings.TrimSpace(text),
		Source:   pipeline.Source{Type: pipeline.SourceExtension, Extension: c.api.Name},
		Metadata: map[string]any{pipeline.MetaSummary: map[string]any{"messages": len(pos), "by": c.summariser}}}
	if err := ts.conv.append(&sum); err != nil {
		return "", err
	}
	id := h.at(h.len() - 1).msg.ID
	if err := ts.mark(pos, func(md map[string]any) { md[pipeline.MetaCondensedBy] = id }); err != nil {
		return "", err
	}
	// A truncation that follows in this step must not throw away the
	// summary just written.
	if ts.keepIDs == nil {
		ts.keepIDs = map[string]bool{}
	}
	ts.keepIDs[id] = true
	after := len(h.effective().idx)
	if bus := c.rt.bus; bus.Active() {
		bus.Publish(events.Event{Topic: events.ContextCondensed, Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Source: c.api.Name,
			Data: map[string]any{"before": before, "after": after, "condensed": len(pos), "summary_id": id, "summariser": c.summariser,
				"tokens_before": tokensBefore, "tokens_after": c.estimate(ts)}})
	}
	return "", nil
}

// transcript renders the messages to summarise.
func (c *condenser) transcript(h *history, pos []int) string {
	var b strings.Builder
	for _, p := range pos {
		m := h.at(p).msg
		text := m.Content
		if r := []rune(text); len(r) > summaryExcerptCharsMax {
			text = string(r[:summaryExcerptCharsMax]) + " […]"
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

const summaryPrompt = "Summarise the conversation below for the assistant who will continue it. " +
	"Keep the user's goals and conditions, decisions made, facts found (file paths, names, numbers), " +
	"what was tried and failed, and what remains to do. Be concise and factual; invent nothing."

// write has the summariser summarise transcript.
func (c *condenser) write(ctx context.Context, ts *turnState, s *pipeline.StepContext, transcript string) (string, error) {
	switch c.summariser {
	case "agent":
		return s.Agents().Request(ctx, c.agent, summaryPrompt+"\n\n"+transcript, pipeline.AgentCallOptions{Timeout: c.timeout,
			Metadata: map[string]any{"purpose": "summary"}})
	case "model":
		return complete(ctx, c.model, ts, "", transcript)
	}
	return complete(ctx, ts.agent.model, ts, ts.agent.modelName, transcript)
}

// complete asks p for a summary of transcript and returns its text.
func complete(ctx context.Context, p model.Provider, ts *turnState, name, transcript string) (string, error) {
	req := &model.Request{Agent: ts.agent.name, InstanceKey: ts.inst.key, TurnID: ts.turnID, Turn: ts.req.Turn, Step: 1, // a call of its own
		Model: name, System: summaryPrompt, Secret: ts.secretFn,
		Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: transcript}}}
	st, err := p.Stream(ctx, req)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch ch.Kind {
		case model.KindText:
			b.WriteString(ch.Text)
		case model.KindUsage:
			ts.usage = ts.usage.Add(ch.Usage) // the summary is the turn's cost
		case model.KindError:
			return "", ch.Err
		}
	}
}
