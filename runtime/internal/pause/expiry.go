package pause

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
)

// expiry is the loop that expires pending items when their deadlines pass;
// its channels are nil when it does not run ([WithoutExpiryTimer]).
type expiry struct {
	wake    chan struct{} // a deadline was added
	stop    chan struct{} // Close asks the loop to end
	done    chan struct{} // closed when it has
	stopped sync.Once     // closes stop
}

// expiryLoop expires pending items when their deadlines pass, until Close.
func (p *Pauses) expiryLoop() {
	defer close(p.expiry.done)
	// again is the wait before firing on a deadline still passed after the
	// loop fired: its item failed to expire (its agent is no longer in the
	// config, another process owns its instance) or the gate refused (the
	// runtime stops). Fired at once, the loop would spin, logging each
	// failure. It doubles up to a minute while a passed deadline is left; a
	// deadline still to come fires on time all the same (loopWait).
	var again time.Duration
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		next, passed := p.deadlines(p.env.Now())
		if !passed {
			again = 0
		}
		if wait, ok := loopWait(p.env.Now(), next, passed, again); ok {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		select {
		case <-p.expiry.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-p.expiry.wake:
			if timer != nil {
				timer.Stop()
			}
		case <-fire:
			if p.env.Gate.Enter() {
				_, err := p.Expire(context.Background())
				p.env.Gate.Leave()
				p.logExpiry(err)
			}
			again = min(max(2*again, time.Second), time.Minute)
		}
	}
}

// logExpiry logs what ExpirePending returned: a task that failed because a
// required item timed out is the timeout doing its job, at info; any other
// error is a failure to expire, at error.
func (p *Pauses) logExpiry(err error) {
	if err == nil {
		return
	}
	for _, e := range joined(err) {
		if errors.Is(e, ErrTaskFailed) {
			p.env.Logger.Info("a required pending item timed out; its task failed", "err", e)
		} else {
			p.env.Logger.Error("expiry of pending items failed", "err", e)
		}
	}
}

// onlyTaskFailures reports whether every error joined in err is a task
// that failed on a timeout (see logExpiry).
func onlyTaskFailures(err error) bool {
	for _, e := range joined(err) {
		if !errors.Is(e, ErrTaskFailed) {
			return false
		}
	}
	return true
}

// joined returns the errors errors.Join joined into err, or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// NextDeadline returns the earliest deadline of a pending item.
func (p *Pauses) NextDeadline() (time.Time, bool) {
	items, err := p.env.Ledger.List(context.Background(), ledger.Filter{Status: ledger.Pending})
	if err != nil {
		p.env.Logger.Error("list pending items", "err", err)
		return time.Time{}, false
	}
	var next time.Time
	for _, it := range items {
		if !it.ExpiresAt.IsZero() && !p.waits(it) && (next.IsZero() || it.ExpiresAt.Before(next)) {
			next = it.ExpiresAt
		}
	}
	return next, !next.IsZero()
}

// deadlines returns the earliest deadline still to come after now of the
// open items the loop may expire (zero if none), and whether the deadline
// of one has passed.
func (p *Pauses) deadlines(now time.Time) (next time.Time, passed bool) {
	items, err := p.env.Ledger.List(context.Background(), ledger.Filter{Status: ledger.Pending})
	if err != nil {
		p.env.Logger.Error("list pending items", "err", err)
		return time.Time{}, false
	}
	for _, it := range items {
		switch {
		case it.ExpiresAt.IsZero() || p.waits(it):
		case !it.ExpiresAt.After(now):
			passed = true
		case next.IsZero() || it.ExpiresAt.Before(next):
			next = it.ExpiresAt
		}
	}
	return next, passed
}

// loopWait is how long the expiry loop sleeps at now: until the next
// deadline, or, when one has passed, again if that is sooner; ok is false
// when it has nothing to wait for.
func loopWait(now, next time.Time, passed bool, again time.Duration) (wait time.Duration, ok bool) {
	switch {
	case passed && (next.IsZero() || again < next.Sub(now)):
		return again, true
	case !next.IsZero():
		return next.Sub(now), true
	}
	return 0, false
}

// waits reports whether item it belongs to an agent that failed to load:
// only its own extensions know how it expires and how its turn resumes,
// so it waits for a runtime that loads them.
func (p *Pauses) waits(it ledger.Item) bool { return p.env.Unavailable(it.Agent) != nil }

// wake tells the expiry loop that a deadline was added.
func (p *Pauses) wake() {
	select {
	case p.expiry.wake <- struct{}{}:
	default:
	}
}

// Start starts the loop that expires pending items when their deadlines
// pass; without it, only Expire does.
func (p *Pauses) Start() {
	p.expiry.wake, p.expiry.stop, p.expiry.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go p.expiryLoop()
}

// Stop ends the expiry loop, if it runs, and waits for it; calling it
// again returns at once.
func (p *Pauses) Stop() {
	if p.expiry.stop != nil {
		p.expiry.stopped.Do(func() { close(p.expiry.stop) })
		<-p.expiry.done
	}
}

// Recover finishes what a stopped process left of the pauses: the resumes
// of turns whose items were all resolved, and the deadlines that passed
// meanwhile. It logs what fails, and returns it but for the tasks that
// failed because a required item timed out, which is the timeout doing
// its job. The caller has entered the gate.
func (p *Pauses) Recover(ctx context.Context) error {
	var errs []error
	if err := p.recoverResumes(ctx); err != nil {
		p.env.Logger.Error("resume of answered pending items failed", "err", err)
		errs = append(errs, err)
	}
	if _, err := p.Expire(ctx); err != nil {
		p.logExpiry(err)
		if !onlyTaskFailures(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
