package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// This file holds the JetStream store's fences ([store.Store.Fence]).
//
// An instance's fence is its fence.AGENT.INSTANCE key, and a fence is the
// stream sequence of that key's latest write: taking one writes the key,
// so every fence is greater than the ones before it, whoever took them. A
// fenced commit asks the server, in the first message of its batch, to
// store the batch only if the fence key's last sequence is still the
// batch's fence (Nats-Expected-Last-Subject-Sequence, checked against
// another subject by Nats-Expected-Last-Subject-Sequence-Subject). The
// server checks it on the stream's leader with the batch, so no write of
// the fence can come between the check and the batch.

// Error codes of the server's answer to a fenced batch.
const (
	// errWrongLast: the fence key's last sequence is another, a later
	// fence was taken.
	errWrongLast = 10071
	// errSubjectInFlight: a write of the fence key, or another batch that
	// checks it, is in flight on the leader; the batch is tried again and
	// then meets the outcome of that write.
	errSubjectInFlight = 10164
)

func jsFenceKey(agent, key string) string { return jsInstance("fence", agent, key) }

// Fence implements [store.Store.Fence]: the fence is the sequence of the
// fence key's new write.
func (s *jsStore) Fence(ctx context.Context, agent, key string) (uint64, error) {
	taken := time.Now().UTC().AppendFormat(nil, time.RFC3339Nano) // for whoever reads the bucket
	rctx, cancel := s.request(ctx)
	defer cancel()
	seq, err := s.kv.Put(rctx, jsFenceKey(agent, key), taken)
	if err != nil {
		return 0, fmt.Errorf("store: take the fence of agent %q instance %q: %w", agent, key, s.unavailable(ctx, err))
	}
	return seq, nil
}

// fenced makes the batch conditional on the instance's fence.
func (b *batch) fenced(agent, key string, fence uint64) {
	if len(b.msgs) == 0 {
		return
	}
	h := b.msgs[0].Header
	h.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(fence, 10))
	h.Set("Nats-Expected-Last-Subject-Sequence-Subject", b.s.subject+jsFenceKey(agent, key))
}

// isWrongLast reports whether the server refused a batch because a
// subject's last sequence was not the one expected.
func isWrongLast(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.errCode == errWrongLast
}
