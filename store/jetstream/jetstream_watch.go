package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// each calls f with every live entry whose key matches one of filters,
// read through a watch: for any number of keys, but without isolation
// from commits (snapshot has it, up to 1,024 keys). With metaOnly the
// entries carry no value.
//
// A watch delivers each key's latest value as it reaches it, so a commit
// that lands during the watch could show some of its values and not
// others. each narrows that: it takes the stream's last sequence first,
// and an entry newer than that sequence means a key changed in between,
// so it watches again after a short wait. A commit can still split a
// read (the sequence need not fall between two commits, and a watch can
// end before a value stored after it began).
//
// On a replicated bucket the watch's consumer runs on any replica, and a
// follower may not have applied the last commits yet: a key put just
// before would be missing. So each also watches the key of the leader's
// last message (mark), and takes the answer only from a replica that has
// it at that sequence.
func (s *jsStore) each(ctx context.Context, filters []string, metaOnly bool, f func(natsjs.KeyValueEntry) error) error {
	deadline := time.Now().Add(maxSnapshotWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		last, mark, err := s.mark(ctx)
		if err != nil {
			return err
		}
		entries, fresh, err := s.watch(ctx, filters, last, mark, metaOnly)
		if err != nil {
			return err
		}
		if fresh {
			for _, e := range entries {
				if err := f(e); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return unsettled(filters)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// unsettled is each's error when no watch of filters was whole within
// maxSnapshotWait: the keys kept changing (writers busy on them), or the
// replica that answered stayed behind its leader. Either passes, and the
// store could not answer now: it matches store.ErrUnavailable, as a read
// from a replica that stays behind does in snapshot, so that a caller
// tries again instead of taking it for a failure of the store.
func unsettled(filters []string) error {
	return &unavailableError{msg: fmt.Sprintf("the keys %s kept changing while they were read, or the replica that answered stayed behind its leader, for %s",
		strings.Join(filters, ", "), maxSnapshotWait), err: errNotWhole}
}

// errNotWhole is the cause of unsettled.
var errNotWhole = errors.New("no read of them was whole")

// mark returns the sequence a read must see, and on a replicated bucket
// the key that shows a replica has it. On one replica, that is the
// stream's last sequence and no key. On several, it is the last message
// the leader still has, and its key: a watch that sees that key at that
// sequence runs on a replica that has every message the leader has. (The
// stream's last sequence will not do: its message may have been removed
// since, a value replaced or a key purged, and nothing would show it.)
func (s *jsStore) mark(ctx context.Context) (last uint64, mark string, err error) {
	if !s.replicated {
		rctx, cancel := s.request(ctx)
		defer cancel()
		info, err := s.stream.Info(rctx)
		if err != nil {
			return 0, "", s.unavailable(ctx, err)
		}
		return info.State.LastSeq, "", nil
	}
	m, err := s.leaderLast(ctx, s.subject+">")
	if err != nil || m == nil {
		return 0, "", err // none: an empty bucket
	}
	mark, ok := strings.CutPrefix(m.Subject, s.subject)
	if !ok {
		return 0, "", fmt.Errorf("message %d of the bucket's stream has subject %q, not one of its keys", m.Seq, m.Subject)
	}
	return m.Seq, mark, nil
}

// watch returns the live entries that match filters, and whether the
// answer is whole: none is newer than the stream's sequence last, and the
// replica has reached last, shown by its entry for key mark at last
// (unless mark is "").
func (s *jsStore) watch(ctx context.Context, filters []string, last uint64, mark string, metaOnly bool) ([]natsjs.KeyValueEntry, bool, error) {
	watched := slices.Clone(filters) // WatchFiltered rewrites the slice it is given
	// The server refuses overlapping filters: mark is added only when no
	// filter matches it, and then it is not an answer.
	extra := mark != "" && !slices.ContainsFunc(filters, func(f string) bool { return subjectMatches(f, mark) })
	if extra {
		watched = append(watched, mark)
	}
	var opts []natsjs.WatchOpt
	if metaOnly {
		opts = append(opts, natsjs.MetaOnly())
	}
	// The watch ends with wctx; each entry must come within the request
	// timeout of the one before, which bounds a watch of any size.
	// Its creation is a request too: ending wctx cuts it short.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	created := time.AfterFunc(s.timeout, cancel)
	w, err := s.kv.WatchFiltered(wctx, watched, opts...)
	if !created.Stop() && err == nil {
		w.Stop()
		err = context.Canceled
	}
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			err = context.DeadlineExceeded // the request timed out
		}
		return nil, false, s.unavailable(ctx, err)
	}
	defer w.Stop()
	silent := time.NewTimer(s.timeout)
	defer silent.Stop()
	reached := mark == ""
	var out []natsjs.KeyValueEntry
	for {
		select {
		case e := <-w.Updates():
			silent.Reset(s.timeout)
			switch {
			case e == nil: // every current value is delivered
				if !reached {
					return nil, false, nil
				}
				return out, true, nil
			case e.Revision() > last:
				return nil, false, nil
			}
			if e.Key() == mark {
				reached = e.Revision() == last
				if extra {
					continue
				}
			}
			if e.Operation() == natsjs.KeyValuePut {
				out = append(out, e)
			}
		case <-silent.C:
			return nil, false, s.unavailable(ctx, context.DeadlineExceeded)
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// subjectMatches reports whether subject (no wildcards) matches filter,
// whose tokens may be "*" (any one token) or, last, ">" (one or more).
func subjectMatches(filter, subject string) bool {
	for {
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case ft == ">":
			return true
		case ft != "*" && ft != st:
			return false
		case !fmore || !smore:
			return fmore == smore
		}
		filter, subject = frest, srest
	}
}

// keys returns the live keys that match filter.
func (s *jsStore) keys(ctx context.Context, filter string) ([]string, error) {
	var out []string
	err := s.each(ctx, []string{filter}, true, func(e natsjs.KeyValueEntry) error {
		out = append(out, e.Key())
		return nil
	})
	return out, err
}
