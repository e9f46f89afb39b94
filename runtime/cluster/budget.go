package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// This file counts a task tree's spending across the processes of a
// cluster. One process counts a tree in memory (package runtime); in a
// cluster its tasks run on several, so each addition also goes to the
// cluster's counters of the tree (coord.Counters), whose sums
// every process reads before it judges the budget.

// budgetCountersAge is how long the counters of a tree nothing spends on
// are kept: a tree that ends forgets its counters at once; one whose
// root was lost stops counting after this.
const budgetCountersAge = 7 * 24 * time.Hour

// The counters of a tree, one per field of seam.Spend.
const (
	counterDelegations = "delegations"
	counterTurns       = "turns"
	counterTokens      = "tokens"
)

// addSpend adds s to the counters of the tree of root task root. The
// additions run in the background, so that a turn's end does not wait
// for them under the tasks' lock: until one is answered, another process
// reading the sums misses it, as it would had it been made a moment
// later. Close waits for them.
func (n *node) AddSpend(root string, s seam.Spend) {
	for _, f := range []struct {
		name  string
		delta int64
	}{
		{counterDelegations, int64(s.Delegations)},
		{counterTurns, int64(s.Turns)},
		{counterTokens, s.Tokens},
	} {
		if f.delta == 0 {
			continue
		}
		n.adding.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
			defer cancel()
			if _, err := n.budgets.Add(ctx, root, f.name, f.delta); err != nil {
				n.log.Warn("a task tree's spending was not counted in the cluster; this process counts it alone", "task", root, "counter", f.name, "add", f.delta, "err", err)
			}
		})
	}
}

// sharesSpend is true: what task trees spend is counted in the cluster's
// counters.
func (n *node) SharesSpend() bool { return true }

// forgetSpent deletes the counters of the tree of root task root, which
// ended.
func (n *node) ForgetSpent(ctx context.Context, root string) error {
	return n.budgets.Forget(ctx, root)
}

// readSpent returns the cluster's sums of the tree of root task root,
// each read bounded by leaseTimeout (past it, its error matches
// store.ErrUnavailable).
func (n *node) ReadSpent(ctx context.Context, root string) (seam.Spend, error) {
	rctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		sums [3]int64
		errs [3]error
	)
	for i, name := range []string{counterDelegations, counterTurns, counterTokens} {
		wg.Go(func() {
			sums[i], errs[i] = n.budgets.Get(rctx, root, name)
			errs[i] = coord.Unavailable(ctx, errs[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return seam.Spend{}, err
	}
	return seam.Spend{Delegations: int(sums[0]), Turns: int(sums[1]), Tokens: sums[2]}, nil
}
