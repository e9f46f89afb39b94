package coord

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/internal/jsopen"
	"github.com/nats-io/nats.go/jetstream"
)

// requestTimeout bounds each request of this package to NATS, whether or
// not the caller's ctx has a deadline (the JetStream client gives a
// request 5 s only when it has none). A live server answers in
// milliseconds; a replicated write during a stream's leader election
// takes seconds. A variable for tests.
var requestTimeout = 5 * time.Second

// bound returns ctx with requestTimeout as a deadline of its own.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}

// ErrHeld is the error of Acquire when another owner holds the lease.
var ErrHeld = errors.New("lease held by another owner")

// ErrLost is the error of Renew and Release when the lease is no longer
// the caller's: it expired, and maybe another owner took it.
var ErrLost = errors.New("lease lost")

// Leases grants leases on names to one owner, in a bucket every owner
// shares.
type Leases struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	prefix string // of a key's subject
	owner  string
	ttl    time.Duration
}

// minTTL is the shortest lease: JetStream's TTLs are whole seconds.
const minTTL = time.Second

// Open returns owner's leases in bucket, which it creates with replicas
// copies (0: 1) if it does not exist ([jsopen.KeyValue]: tried again while
// a server looks offline); a lease lasts ttl (at least a second) past its
// last renewal.
func Open(ctx context.Context, js jetstream.JetStream, bucket, owner string, ttl time.Duration, replicas int) (*Leases, error) {
	if owner == "" {
		return nil, errors.New("cluster: a lease owner needs a name")
	}
	ttl = max(ttl.Truncate(time.Second), minTTL)
	kv, err := leaseBucket(ctx, js, bucket, max(replicas, 1))
	if err != nil {
		return nil, fmt.Errorf("cluster: open lease bucket %q: %w", bucket, err)
	}
	return &Leases{js: js, kv: kv, prefix: "$KV." + bucket + ".", owner: owner, ttl: ttl}, nil
}

// leaseBucket returns the lease bucket, creating it, or updating it to
// replicas, if it is not as a lease bucket must be. Its reads go to its
// stream's leader (jsopen.LeaderReads): a lease is taken after a read
// that says it is free, and a replica behind its leader may still show
// the lease just released, or not yet show the one just taken. A bucket
// that is as it must be is bound as it is: updating it would let direct
// reads back in (a bucket's configuration cannot turn them off), for the
// processes that bind it meanwhile.
func leaseBucket(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (jetstream.KeyValue, error) {
	stream, err := jsopen.Create(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, "KV_"+bucket) })
	switch {
	case err == nil:
		if cfg := stream.CachedInfo().Config; cfg.Replicas == replicas && (replicas == 1 || !cfg.AllowDirect) && cfg.SubjectDeleteMarkerTTL > 0 {
			kv, err := jsopen.Create(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, bucket) })
			if err == nil {
				err = jsopen.WaitLeader(ctx, stream)
			}
			return kv, err
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, err
	}
	_, stream, err = jsopen.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "Ganglion's instance leases", History: 1, Replicas: replicas,
		// Markers of expired keys are kept a moment, so that a watcher
		// sees an expiry; the TTLs need the bucket to allow them.
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, err
	}
	return jsopen.LeaderReads(ctx, js, bucket, stream)
}

// TTL returns how long a lease lasts past its last renewal.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Lease is a lease the caller holds. It is safe for concurrent use.
type Lease struct {
	l    *Leases
	name string
	key  string

	mu  sync.Mutex
	rev uint64 // of the owner's last write; 0 once released or lost
}

func leaseKey(name string) string {
	return "lease." + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// Acquire takes the lease on name, or fails with an error matching
// [ErrHeld] that names its owner. Its errors, as those of every request
// here, match [store.ErrUnavailable] when JetStream did not answer
// ([Unavailable]).
func (l *Leases) Acquire(ctx context.Context, name string) (*Lease, error) {
	key := leaseKey(name)
	var rev uint64
	// A second write of a create that was applied fails with "the key
	// exists" and is found to be ours below.
	err := retry(ctx, true, func(cctx context.Context) (err error) {
		rev, err = l.kv.Create(cctx, key, []byte(l.owner), jetstream.KeyTTL(l.ttl))
		return err
	})
	// The key is there: "key exists", or, on a replicated bucket whose
	// key was deleted (released, or expired), "wrong last sequence". It
	// may be this owner's, from a create tried again.
	if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) {
		cctx, cancel := bound(ctx)
		defer cancel()
		e, gerr := l.kv.Get(cctx, key)
		switch {
		case gerr == nil && string(e.Value()) == l.owner:
			// Ours: a create tried again after its answer was lost,
			// or a renewal that timed out on the way back was applied
			// and the revision this process knew went stale. Nobody
			// else took it, so it is taken as it is.
			return &Lease{l: l, name: name, key: key, rev: e.Revision()}, nil
		case gerr == nil:
			return nil, &HeldError{Name: name, Owner: string(e.Value())}
		case jsopen.Unavailable(gerr):
			return nil, fmt.Errorf("cluster: lease on %q: who holds it: %w", name, Unavailable(ctx, gerr))
		}
		// It expired or was released since: the caller tries again.
		return nil, &HeldError{Name: name, Owner: "?"}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: lease on %q: %w", name, Unavailable(ctx, err))
	}
	return &Lease{l: l, name: name, key: key, rev: rev}, nil
}

// HeldError is the error of Acquire when another owner holds the lease;
// it matches [ErrHeld].
type HeldError struct {
	Name  string // the lease's name
	Owner string // who holds it; "?" if it was gone by the time Acquire looked
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("cluster: lease on %q: %v (%s)", e.Name, ErrHeld, e.Owner)
}

// Is makes a HeldError match [ErrHeld].
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Owner returns who holds the lease on name, or "" when nobody does.
func (l *Leases) Owner(ctx context.Context, name string) (string, error) {
	cctx, cancel := bound(ctx)
	defer cancel()
	e, err := l.kv.Get(cctx, leaseKey(name))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cluster: owner of lease on %q: %w", name, Unavailable(ctx, err))
	}
	return string(e.Value()), nil
}

// WatchHolders calls fn with who holds the bucket's leases, each once,
// sorted, once they are all read, then after each change, until ctx ends;
// fn runs on one goroutine, one call at a time. It returns once the watch
// is set up. Over a bucket where each owner holds a lease on its own name,
// that is the owners alive: one that releases its lease, or stops
// renewing it, drops out.
func (l *Leases) WatchHolders(ctx context.Context, fn func([]string)) error {
	w, err := l.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("cluster: watch lease holders: %w", Unavailable(ctx, err))
	}
	go func() {
		defer w.Stop()
		held := map[string]string{} // key → holder
		ready := false
		for e := range w.Updates() {
			if e == nil {
				ready = true
			} else if e.Operation() == jetstream.KeyValuePut {
				held[e.Key()] = string(e.Value())
			} else {
				delete(held, e.Key())
			}
			if ready {
				out := slices.Sorted(maps.Values(held))
				fn(slices.Compact(out))
			}
		}
	}()
	return nil
}

// Self returns the name of the owner the leases are granted to.
func (l *Leases) Self() string { return l.owner }

// Held reports whether the lease is still the caller's as far as it
// knows: it was not released, and no renewal found it lost.
func (le *Lease) Held() bool {
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.rev != 0
}

// Name returns the name the lease is on.
func (le *Lease) Name() string { return le.name }

// Renew extends the lease by its TTL from now. It fails with an error
// matching [ErrLost] when the lease is no longer the caller's.
func (le *Lease) Renew(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.rev == 0 {
		return fmt.Errorf("cluster: renew lease on %q: %w", le.name, ErrLost)
	}
	cctx, cancel := bound(ctx)
	defer cancel()
	ack, err := le.l.js.Publish(cctx, le.l.prefix+le.key, []byte(le.l.owner),
		jetstream.WithExpectLastSequencePerSubject(le.rev), jetstream.WithMsgTTL(le.l.ttl))
	if err != nil {
		if isWrongSequence(err) {
			le.rev = 0
			return fmt.Errorf("cluster: renew lease on %q: %w", le.name, ErrLost)
		}
		return fmt.Errorf("cluster: renew lease on %q: %w", le.name, Unavailable(ctx, err))
	}
	le.rev = ack.Sequence
	return nil
}

// Release gives the lease up, so that another owner can take it at once.
// Releasing a lease that was lost fails with an error matching [ErrLost]
// and leaves the new owner's alone.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.rev == 0 {
		return fmt.Errorf("cluster: release lease on %q: %w", le.name, ErrLost)
	}
	rev := le.rev
	le.rev = 0
	cctx, cancel := bound(ctx)
	defer cancel()
	if err := le.l.kv.Purge(cctx, le.key, jetstream.LastRevision(rev)); err != nil {
		if isWrongSequence(err) {
			return fmt.Errorf("cluster: release lease on %q: %w", le.name, ErrLost)
		}
		return fmt.Errorf("cluster: release lease on %q: %w", le.name, Unavailable(ctx, err))
	}
	return nil
}

// isWrongSequence reports whether err is JetStream refusing a write
// conditional on a revision that is no longer the last.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) // the second on replicated buckets
}
