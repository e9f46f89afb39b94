package jsopen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Timeout bounds an opening whose context has no deadline. The client
// gives a request 5 s when the context has none; creating a replicated
// bucket on a busy cluster can take longer, and opening is rare and
// idempotent: worth waiting for at a process's start.
const Timeout = 30 * time.Second

// Bound returns ctx with Timeout as its deadline if it has none; a
// caller's own deadline rules.
func Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, Timeout)
}

// Error codes of the NATS server that a client library does not name.
const (
	// codeNoPeers (JSClusterNoPeersErrF): no placement for the stream's
	// replicas; the description says why.
	codeNoPeers jetstream.ErrorCode = 10005
	// codeUnavailable (JSClusterNotAvailErr): the cluster has no
	// JetStream leader at the moment, as during an election.
	codeUnavailable jetstream.ErrorCode = 10008
)

// Transient reports whether err is a refusal a cluster may drop by itself
// within seconds: it has no JetStream leader yet, or it cannot place the
// replicas because a server looks offline. A server looks offline to the
// leader from the moment its route to the leader is (re)established until
// its next statistics arrive (every 10 s at most), and once it has
// stopped. Other placement failures (too few servers, no storage left,
// tags) stay until someone acts, and are not transient.
func Transient(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case codeNoPeers:
		return strings.Contains(api.Description, "peer offline")
	case codeUnavailable:
		return true
	}
	return false
}

// Unavailable reports whether err, from a request to NATS or JetStream,
// says that nobody answered, or not in time, or that the cluster cannot
// serve for now: no responders (a stream without a leader during an
// election), no response from the stream, a timeout, a connection that
// is reconnecting, or a [Transient] refusal or 503 of the JetStream API.
// Such a request may succeed a moment later. A deadline counts: the
// caller tells its own ctx's end from the request's bound.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{nats.ErrNoResponders, nats.ErrTimeout, nats.ErrConnectionReconnecting, nats.ErrDisconnected,
		jetstream.ErrNoStreamResponse, jetstream.ErrJetStreamNotEnabled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	var api *jetstream.APIError
	return Transient(err) || errors.As(err, &api) && api.Code == 503
}

// Backoff bounds the wait between two tries of [Create].
const (
	firstWait = 50 * time.Millisecond
	maxWait   = time.Second
)

// tryTimeout bounds a try of [Create]; a variable for tests.
var tryTimeout = 10 * time.Second

// Create calls create until it succeeds or fails with an error that is not
// [Transient], or ctx, [Bound], ends. A try gets at most 10 s: right after
// a server restarts, a request to the JetStream API can go unanswered (seen:
// a stream's creation, 1 time in 6), and create must be idempotent, as a
// creation or update of the same configuration is. When ctx ends after a
// transient failure, the error is that failure (more telling than the
// deadline), saying how long it lasted.
func Create[T any](ctx context.Context, create func(context.Context) (T, error)) (T, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	start := time.Now()
	wait := firstWait
	var last error // the last transient failure
	for {
		tctx, cancelTry := context.WithTimeout(ctx, tryTimeout)
		v, err := create(tctx)
		cancelTry()
		switch {
		case err == nil:
			return v, nil
		case Transient(err):
			last = err
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			last = fmt.Errorf("no answer within %s: %w", tryTimeout, err)
		case last != nil && ctx.Err() != nil:
			return v, stillSo(last, start) // ctx ended during a try
		default:
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, stillSo(last, start)
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// KeyValue creates or updates the bucket cfg describes, as [Create] does,
// and returns it with its stream once the stream has its leader and
// replicas ([WaitLeader]), all within ctx, [Bound].
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, jetstream.Stream, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	kv, err := Create(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.CreateOrUpdateKeyValue(ctx, cfg) })
	if err != nil {
		return nil, nil, err
	}
	stream, err := Create(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, "KV_"+cfg.Bucket) })
	if err == nil {
		err = WaitLeader(ctx, stream)
	}
	if err != nil {
		return nil, nil, err
	}
	return kv, stream, nil
}

// LeaderReads makes the reads of a replicated bucket, whose stream is
// stream, go to the stream's leader, and returns the bucket bound again
// to read so. A bucket's reads are direct gets, which any replica answers;
// one behind its leader answers what was true a moment ago: a key just
// deleted is still there, a key just created not yet. Where a read
// decides what to write next (a lease taken after its release), that is
// wrong; the leader answers what was last written. A bucket of one
// replica is returned as it is.
func LeaderReads(ctx context.Context, js jetstream.JetStream, bucket string, stream jetstream.Stream) (jetstream.KeyValue, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	if cfg := stream.CachedInfo().Config; cfg.Replicas > 1 && cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := Create(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.UpdateStream(ctx, cfg) }); err != nil {
			return nil, fmt.Errorf("reads from the leader: %w", err)
		}
	}
	// The bucket reads directly as long as its stream says so when it is
	// bound: bound again, now.
	return Create(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, bucket) })
}

// Stream is [KeyValue] for a stream.
func Stream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	ctx, cancel := Bound(ctx)
	defer cancel()
	stream, err := Create(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.CreateOrUpdateStream(ctx, cfg) })
	if err == nil {
		err = WaitLeader(ctx, stream)
	}
	if err != nil {
		return nil, err
	}
	return stream, nil
}

func stillSo(err error, start time.Time) error {
	return fmt.Errorf("%w (still so after %s)", err, time.Since(start).Round(100*time.Millisecond))
}

// WaitLeader waits until a replicated stream has elected its leader and
// its replicas, which takes a moment after it is created: until then
// writes find no one.
func WaitLeader(ctx context.Context, stream jetstream.Stream) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := Create(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) { return stream.Info(ctx) })
		if err != nil {
			return err
		}
		if c := info.Cluster; c == nil || c.Leader != "" && len(c.Replicas) == info.Config.Replicas-1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("its stream has no leader and replicas after 10 s")
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
