package events

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The topics the runtime publishes, each with a payload type (its name and
// "Data"). An extension's own topics start with its name ("audit.tool_call").
const (
	TurnStarted      = "turn.started"
	TurnFinished     = "turn.finished"
	StepFinished     = "step.finished"
	ModelDelta       = "model.delta"
	ToolStarted      = "tool.started"
	ToolFinished     = "tool.finished"
	MessageAppended  = "message.appended"
	TurnInterrupted  = "turn.interrupted"
	LayerSkipped     = "middleware.skipped"
	ModelRetry       = "model.retry"
	ContextCondensed = "context.condensed"
	ContextTruncated = "context.truncated"
	TaskDelegated    = "task.delegated"
	TaskCompleted    = "task.completed"
	TaskAnswered     = "task.answered"
	TaskBudgetSpent  = "task.budget_spent"
	TeamActivated    = "team.activated"

	ExtensionFileWritten = "extension.file.written"
)

// Event is one published event; Data must be JSON-serialisable.
type Event struct {
	Topic    string    `json:"topic"`
	Time     time.Time `json:"time"`
	Agent    string    `json:"agent,omitempty"`
	Instance string    `json:"instance,omitempty"`
	TurnID   string    `json:"turn_id,omitempty"`
	Source   string    `json:"source"` // "runtime" or the extension's name
	Data     any       `json:"data,omitempty"`
	// Process names the cluster process the event happened on, if not this one.
	Process string `json:"process,omitempty"`
}

// Handler receives events on the publisher's goroutine: it must not block.
type Handler func(Event)

type subscription struct {
	pattern string
	fn      Handler
	live    atomic.Bool
}

// Bus is an in-process publish/subscribe bus, safe for concurrent use.
// Delivery is synchronous, in publication order per publisher; a handler
// that panics is logged and unsubscribed.
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

// Active reports whether anyone subscribes to anything.
func (b *Bus) Active() bool {
	p := b.subs.Load()
	return p != nil && len(*p) > 0
}

// Subscribe calls fn for every event whose topic matches pattern: a topic,
// "prefix.*" or "*". The returned function unsubscribes.
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
