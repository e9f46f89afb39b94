package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// lostAnswerStore loses the answer of the next commit once armed: the
// commit lands (land) or not, and the caller is told its outcome is
// unknown, as by a NATS server that died with it.
type lostAnswerStore struct {
	store.Store
	armed atomic.Bool
	land  bool
}

func (s *lostAnswerStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.Commit(ctx, agent, key, b)
	}
	if s.land {
		if err := s.Store.Commit(ctx, agent, key, b); err != nil {
			return err
		}
	}
	return fmt.Errorf("store: commit agent %q instance %q: the server did not answer within 10s (test): %w: %w", agent, key, store.ErrUnavailable, store.ErrOutcomeUnknown)
}

const lostResumeConfig = `
agents:
  - name: a
    extensions: [{name: protocol}]
`

const lostResumeScript = `
agents:
  a:
    turns:
      - match: "ask"
        steps:
          - text: "[USER_QUESTION]\ncategory: choice\nquestion: Which way?\noptions: [Left, Right]\nrequired: true\n[/USER_QUESTION]"
      - match: "Answer to your question"
        steps: [{text: "resumed with {{ .Input }}"}]
`

// TestResumeAfterLostCommit: an answer whose resume turn's commit got no
// answer from the store (its outcome unknown) is not left answered and
// never resumed: the runtime tries the resume again by itself, and the
// turn ends once in the history, whether the lost commit had landed or
// not. The chaos soak saw such an item stay answered, its resume gone,
// after a NATS server's death.
func TestResumeAfterLostCommit(t *testing.T) {
	for _, land := range []bool{false, true} {
		t.Run(fmt.Sprintf("landed=%v", land), func(t *testing.T) {
			st := &lostAnswerStore{Store: store.NewMemory(), land: land}
			rt, _ := newCrashRuntime(t, lostResumeConfig, lostResumeScript, st)
			ctx := context.Background()
			if res, err := rt.Send(ctx, "a", "k", pipeline.InputEvent{Text: "ask"}); err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("ask = %+v, %v", res, err)
			}
			items, err := rt.Pending(ctx, ledger.Filter{Open: true})
			if err != nil || len(items) != 1 {
				t.Fatalf("pending = %v, %v", items, err)
			}
			st.armed.Store(true)
			_, err = rt.Answer(ctx, items[0].ID, "Left")
			if !errors.Is(err, store.ErrOutcomeUnknown) {
				t.Fatalf("answer whose resume's commit got no answer = %v; want one matching store.ErrOutcomeUnknown", err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				it, err := rt.PendingItem(ctx, items[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				hist, err := rt.History(ctx, "a", "k")
				if err != nil {
					t.Fatal(err)
				}
				resumed := 0
				for _, m := range hist {
					if m.Role == pipeline.RoleAssistant && strings.Contains(m.Content, "resumed with") {
						resumed++
					}
				}
				if it.ResumedBy != "" && resumed > 0 {
					if resumed != 1 {
						t.Fatalf("the resume ended %d times in the history, want once", resumed)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("20 s after the lost commit: item resumed by %q, %d resumes in the history; want the resume tried again and ended", it.ResumedBy, resumed)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
