package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

const shutdownConfig = `
agents:
  - name: a
    tools: [hold]
    extensions: [{name: protocol}]
`

// TestShutdown: a stop lets a running resume turn finish within its time,
// refusing new turns meanwhile; a stop whose time is up cuts the turn, the
// answerer is told the answer was taken, and the next start finishes it.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
	}{
		{"the turn ends in time", time.Minute},
		{"time is up", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := store.NewMemory()
			h := newHoldTool()
			rt, _ := newCrashRuntime(t, shutdownConfig, holdScript, mem, h.tool())
			if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("start")); !errors.Is(err, runtime.ErrPaused) && err != nil {
				t.Fatal(err)
			}
			items, err := rt.Pending(ctx, ledger.Filter{Open: true})
			if err != nil || len(items) != 1 {
				t.Fatalf("pending = %+v, %v", items, err)
			}
			id := items[0].ID
			done := make(chan answered, 1)
			go func() {
				res, err := rt.Answer(ctx, id, "yes")
				done <- answered{res, err}
			}()
			<-h.started
			sctx, cancel := context.WithTimeout(ctx, tc.window)
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- rt.Shutdown(sctx) }()

			if tc.window == time.Minute {
				time.Sleep(300 * time.Millisecond) // the stop began
				if _, err := rt.Send(ctx, "a", "other", runtime.UserMessage("hello")); !errors.Is(err, runtime.ErrClosed) {
					t.Errorf("a turn sent while the runtime stops: %v; want ErrClosed", err)
				}
				close(h.release)
				if a := <-done; a.err != nil || a.res.Response.Content != "resumed after hold" {
					t.Errorf("Answer: %+v, %v; want the resume's answer", a.res, a.err)
				}
				if err := <-stopped; err != nil {
					t.Errorf("Shutdown: %v", err)
				}
				if got := h.ended(); !slices.Equal(got, []string{"released"}) {
					t.Errorf("hold's calls ended %q; want once, released", got)
				}
				return
			}
			if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown: %v; want its time up", err)
			}
			a := <-done
			want := `pending item ` + id + `: the answer was taken, but its resume turn turn-2 did not end: runtime: closed: the runtime stopped before the turn ended; the instance's next owner finishes it`
			if a.err == nil || a.err.Error() != want || !errors.Is(a.err, runtime.ErrClosed) || errors.Is(a.err, context.Canceled) {
				t.Errorf("Answer: %+v, %v;\nwant the error %q, matching ErrClosed", a.res, a.err, want)
			}
			if a.res == nil || a.res.FinishReason != pipeline.FinishAborted {
				t.Errorf("Answer's result: %+v; want the resume turn aborted", a.res)
			}
			// The next start finishes the turn.
			h2 := newHoldTool()
			close(h2.release)
			rt2, _ := newCrashRuntime(t, shutdownConfig, holdScript, mem, h2.tool())
			it, lines := awaitResumed(t, rt2, id)
			if it.ResumedBy != "turn-2" || len(h2.ended()) != 0 {
				t.Errorf("item %+v, hold ran again %q;\nhistory:\n%s\nwant turn-2 continued, hold not run again", it, h2.ended(), strings.Join(lines, "\n"))
			}
		})
	}
}
