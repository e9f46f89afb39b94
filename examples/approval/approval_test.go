package approval_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestApprovalExample asks the agent to back up its notes, which the rules
// leave to a human, and answers the approval: approved, the call runs once
// and the resumed turn answers from its result; denied, it does not run and
// the resumed turn says so. Either way the agent does not ask again.
func TestApprovalExample(t *testing.T) {
	tests := []struct {
		answer, want string
		copied       bool
	}{
		{"approve", "Backed up. The copy says: Launch on Friday: tag v0.1, then post the announcement.\n", true},
		{"deny", "I left the notes as they are: A human denied the call of execute_command; it did not run.", false},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			// A copy: the command writes into the workspace.
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rt, err := runtime.New(ctx, runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")), runtime.WithMemoryStore())
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Send(ctx, "assistant", "default", runtime.UserMessage("Back up my notes"))
			if err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("the first turn: %v, %+v; want it paused for the approval", err, res)
			}
			items, err := rt.Pending(ctx, ledger.Filter{Open: true})
			if err != nil || len(items) != 1 || items[0].Kind != "approval" {
				t.Fatalf("pending: %v, %+v; want one approval", err, items)
			}
			res, err = rt.Answer(ctx, items[0].ID, tt.answer)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != pipeline.FinishText || res.Response.Content != tt.want {
				t.Errorf("the resumed turn ended %s with %q\nwant the answer %q", res.FinishReason, res.Response.Content, tt.want)
			}
			if open, _ := rt.Pending(ctx, ledger.Filter{Open: true}); len(open) != 0 {
				t.Errorf("the agent asked again: %d open items, the first a %s of %s", len(open), open[0].Kind, open[0].TurnID)
			}
			_, err = os.Stat(filepath.Join(dir, "workspace", "notes.bak"))
			if copied := err == nil; copied != tt.copied {
				t.Errorf("notes.bak written: %v, want %v", copied, tt.copied)
			}
		})
	}
}
