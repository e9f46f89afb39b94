package pause

import (
	"context"
	"errors"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
)

// expiry is the loop that expires pending items when their deadlines pass;
// its channels are nil when it does not run ([WithoutExpiryTimer]).
type expiry struct {
	wake chan struct{} // a deadline was added
	stop chan struct{} // Close asks the loop to end
	done chan struct{} // closed when it has
}

// expiryLoop expires pending items when their deadlines pass, until Close.
func (p *Pauses) expiryLoop() {
	defer close(p.expiry.done)
	// again is the wait before firing on a deadline still passed after the
	// loop fired: its item failed to expire (its agent is no longer in the
	// config, another process owns its instance) or the gate refused (the
	// runtime stops). Fired at once, the loop would spin, logging each
	// failure. It doubles up to a minute, until no passed deadline is left
	// or a deadline is added.
	var again time.Duration
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if next, ok := p.NextDeadline(); ok {
			wait := next.Sub(p.env.Now())
			if wait > 0 {
				again = 0
			} else {
				wait = again
			}
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
			again = 0
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

// Stop ends the expiry loop, if it runs, and waits for it.
func (p *Pauses) Stop() {
	if p.expiry.stop != nil {
		close(p.expiry.stop)
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
