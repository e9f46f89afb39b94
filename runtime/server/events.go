package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/events"
)

// eventLog keeps the latest events of the runtime's bus in a ring, each
// with an ID, for the event streams: a client reads from it at its own
// pace, and one that reconnects with Last-Event-ID gets what it missed,
// as long as the ring still holds it. Appending never waits for a
// reader, so no client can hold up a turn.
type eventLog struct {
	epoch string // this log's prefix of every ID: IDs of another server process are refused
	mu    sync.Mutex
	ring  []*logged
	next  uint64        // the sequence number the next event gets
	wake  chan struct{} // closed, and replaced, at each append
	done  bool
}

// logged is one event of the log; its JSON is made once, by the first
// reader that needs it.
type logged struct {
	seq  uint64
	ev   events.Event
	once sync.Once
	json []byte
}

func newEventLog(capacity int, epoch string) *eventLog {
	return &eventLog{epoch: epoch, ring: make([]*logged, capacity), next: 1, wake: make(chan struct{})}
}

// add appends ev; it is the bus handler, run on the publisher's goroutine.
func (l *eventLog) add(ev events.Event) {
	l.mu.Lock()
	e := &logged{seq: l.next, ev: ev}
	l.ring[int(l.next%uint64(len(l.ring)))] = e
	l.next++
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// close wakes every reader for the last time.
func (l *eventLog) close() {
	l.mu.Lock()
	if !l.done {
		l.done = true
		close(l.wake)
	}
	l.mu.Unlock()
}

// after returns the events after sequence number seq (at most max), the
// channel that is closed when more arrive, whether events after seq were
// lost (the ring no longer holds them), and whether the log is closed.
func (l *eventLog) after(seq uint64, max int) (out []*logged, wake <-chan struct{}, lost, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := uint64(1)
	if l.next > uint64(len(l.ring)) {
		oldest = l.next - uint64(len(l.ring))
	}
	from := seq + 1
	if from < oldest {
		lost, from = true, oldest
	}
	for s := from; s < l.next && len(out) < max; s++ {
		out = append(out, l.ring[int(s%uint64(len(l.ring)))])
	}
	return out, l.wake, lost, l.done
}

// last is the sequence number of the latest event, 0 if none.
func (l *eventLog) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// id is the event ID of sequence number seq: the log's epoch and seq.
func (l *eventLog) id(seq uint64) string { return l.epoch + "-" + strconv.FormatUint(seq, 10) }

// parseID returns the sequence number of an event ID this log gave, and
// false for an ID of another server process (or none).
func (l *eventLog) parseID(id string) (uint64, bool) {
	epoch, seq, ok := strings.Cut(id, "-")
	if !ok || epoch != l.epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

// data returns the event's JSON.
func (e *logged) data() []byte {
	e.once.Do(func() {
		b, err := json.Marshal(e.ev)
		if err != nil {
			b = fmt.Appendf(nil, `{"topic":%q,"error":%q}`, e.ev.Topic, "the event's data is not JSON: "+err.Error())
		}
		e.json = b
	})
	return e.json
}

// filter selects the events a stream shows.
type filter struct {
	agent, instance string
	topics          []string // patterns as events.Match takes them; none: all
}

func (f filter) match(ev *events.Event) bool {
	if f.agent != "" && ev.Agent != f.agent || f.instance != "" && ev.Instance != f.instance {
		return false
	}
	if len(f.topics) == 0 {
		return true
	}
	for _, p := range f.topics {
		if events.Match(p, ev.Topic) {
			return true
		}
	}
	return false
}
