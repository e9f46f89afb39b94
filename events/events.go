package events

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The topics the runtime publishes. Extensions publish their own topics; by
// convention those start with the extension's name ("audit.tool_call").
const (
	TurnStarted     = "turn.started"
	TurnFinished    = "turn.finished"
	StepFinished    = "step.finished"
	ModelDelta      = "model.delta"
	ToolStarted     = "tool.started"
	ToolFinished    = "tool.finished"
	MessageAppended = "message.appended"
	// TurnInterrupted: when an instance loaded, its history showed tool
	// calls without results, because the process stopped while they ran;
	// each got an "interrupted" result, and the turn they belonged to
	// (TurnID) ended there. Data "calls" names them.
	TurnInterrupted = "turn.interrupted"
	LayerSkipped    = "middleware.skipped"
	// ModelRetry: a model call failed with a rate limit or a server or
	// network error and is tried again after a wait.
	ModelRetry = "model.retry"
	// ContextCondensed and ContextTruncated: messages of an instance were
	// summarised, or left out, of the history its model sees; both carry
	// the message counts before and after.
	ContextCondensed = "context.condensed"
	ContextTruncated = "context.truncated"
	// Delegation: a turn delegated a child task; a task
	// completed (reported to its parent, or answered); a root task's
	// answer went to its requester's channel; a team started.
	TaskDelegated = "task.delegated"
	TaskCompleted = "task.completed"
	TaskAnswered  = "task.answered"
	// TaskBudgetSpent: a task tree spent a budget of its root agent's
	// task_budget; its tasks end (see TaskBudgetSpentData).
	TaskBudgetSpent = "task.budget_spent"
	TeamActivated   = "team.activated"
)

// Event is one published event.
type Event struct {
	Topic    string    `json:"topic"`
	Time     time.Time `json:"time"`
	Agent    string    `json:"agent,omitempty"`
	Instance string    `json:"instance,omitempty"`
	TurnID   string    `json:"turn_id,omitempty"`
	// Source is "runtime" or the name of the extension that published the event.
	Source string `json:"source"`
	// Data is the payload; it must be JSON-serialisable.
	Data any `json:"data,omitempty"`
	// Process names the process of a cluster the event happened on, when
	// it is another than the one whose bus delivers it; empty for the
	// bus's own events.
	Process string `json:"process,omitempty"`
}

// Handler receives events. It runs on the publisher's goroutine, so it must
// be quick and must not block; hand slow work to a goroutine of your own.
type Handler func(Event)

type subscription struct {
	pattern string
	fn      Handler
	live    atomic.Bool
}

// Bus is an in-process publish/subscribe bus with topics.
//
// Delivery is synchronous and in publication order per publisher, which
// keeps a turn's events ordered. A handler that panics is logged and
// unsubscribed; it never fails the publisher.
//
// A Bus is safe for concurrent use. Publishing costs one atomic load when
// nobody subscribes.
type Bus struct {
	mu     sync.Mutex // serialises changes to subs
	subs   atomic.Pointer[[]*subscription]
	logger *slog.Logger
	now    func() time.Time
}

// Option configures a [Bus].
type Option interface{ apply(*Bus) }

type optionFunc func(*Bus)

func (f optionFunc) apply(b *Bus) { f(b) }

// WithLogger sets the logger that reports panicking handlers. Default: discard.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(b *Bus) { b.logger = l }) }

// WithClock sets the clock that stamps events. Default: time.Now.
func WithClock(now func() time.Time) Option { return optionFunc(func(b *Bus) { b.now = now }) }

// NewBus returns an empty bus.
func NewBus(opts ...Option) *Bus {
	b := &Bus{logger: slog.New(slog.DiscardHandler), now: time.Now}
	for _, o := range opts {
		o.apply(b)
	}
	return b
}

// Active reports whether anyone subscribes to anything. Publishers use it to
// skip building payloads nobody reads.
func (b *Bus) Active() bool {
	p := b.subs.Load()
	return p != nil && len(*p) > 0
}

// Subscribe calls fn for every event whose topic matches pattern: an exact
// topic ("turn.finished"), a prefix ending in ".*" ("turn.*" matches
// "turn.started" but not "turnover"), or "*" for everything. The returned
// function unsubscribes; it is idempotent.
func (b *Bus) Subscribe(pattern string, fn Handler) (unsubscribe func()) {
	s := &subscription{pattern: pattern, fn: fn}
	s.live.Store(true)
	b.mu.Lock()
	old := b.subs.Load()
	var next []*subscription
	if old != nil {
		next = append(next, *old...)
	}
	next = append(next, s)
	b.subs.Store(&next)
	b.mu.Unlock()
	return func() { b.remove(s) }
}

func (b *Bus) remove(s *subscription) {
	if !s.live.Swap(false) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.subs.Load()
	if old == nil {
		return
	}
	next := make([]*subscription, 0, len(*old))
	for _, o := range *old {
		if o != s {
			next = append(next, o)
		}
	}
	b.subs.Store(&next)
}

// Publish delivers ev to every matching handler. A zero Time is set to now.
func (b *Bus) Publish(ev Event) {
	p := b.subs.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = b.now()
	}
	for _, s := range *p {
		if s.live.Load() && Match(s.pattern, ev.Topic) {
			b.deliver(s, ev)
		}
	}
}

func (b *Bus) deliver(s *subscription, ev Event) {
	defer func() {
		if v := recover(); v != nil {
			b.logger.Error("event handler panicked; unsubscribed", "pattern", s.pattern, "topic", ev.Topic, "panic", v)
			b.remove(s)
		}
	}()
	s.fn(ev)
}

// Match reports whether topic matches pattern (see [Bus.Subscribe]).
func Match(pattern, topic string) bool {
	if pattern == "*" || pattern == topic {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasSuffix(prefix, ".") {
		return strings.HasPrefix(topic, prefix)
	}
	return false
}
