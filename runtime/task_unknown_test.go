package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/store"
)

// agentLostAnswerStore loses the answers of the first lose commits of
// agent's instances: each commit lands (land) or not, and the caller is
// told its outcome is unknown, as by a NATS server that died with it.
type agentLostAnswerStore struct {
	store.Store
	agent string
	lose  atomic.Int32
	land  bool
}

func (s *agentLostAnswerStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if agent != s.agent || s.lose.Add(-1) < 0 {
		return s.Store.Commit(ctx, agent, key, b)
	}
	if s.land {
		if err := s.Store.Commit(ctx, agent, key, b); err != nil {
			return err
		}
	}
	return fmt.Errorf("store: commit agent %q instance %q: the connection to the server was lost while the request waited (test): %w: %w", agent, key, store.ErrUnavailable, store.ErrOutcomeUnknown)
}

// TestTaskTurnAfterLostCommit: a delegated task whose turn failed because
// the store did not confirm a commit (a NATS server down for a moment)
// is not reported as failed: the store's outage is no failure of the
// task, which runs again, and its parent gets its answer. The chaos soak
// saw such a task reported "Task failed: agent helper could not finish
// it: … the connection to the server was lost while the request waited".
func TestTaskTurnAfterLostCommit(t *testing.T) {
	for _, land := range []bool{false, true} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			st := &agentLostAnswerStore{Store: store.NewMemory(), agent: "coder", land: land}
			st.lose.Store(1)
			rt, _ := newCrashRuntime(t, singleConfig, singleScript, st)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := rt.Ask(ctx, "lead", "k", "build a parser")
			if err != nil {
				t.Fatal(err)
			}
			if rep.Response != "The parser is written." {
				t.Errorf("the root task's answer = %q, want the lead's answer to the coder's report", rep.Response)
			}
			lead := mustHistory(t, rt, "lead", "k")
			for _, m := range lead {
				if strings.Contains(m.Content, "Task failed") {
					t.Errorf("the lead was told %q", m.Content)
				}
			}
			coder := mustHistory(t, rt, "coder", "k")
			answers := 0
			for _, m := range coder {
				if m.Content == "parser written" {
					answers++
				}
			}
			if answers != 1 {
				t.Errorf("the coder's history holds its answer %d times, want once:\n%s", answers, strings.Join(describeAll(coder), "\n"))
			}
		})
	}
}
