package jetstream

import (
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		filter, subject string
		want            bool
	}{
		{"secret.YQ.aw.*", "secret.YQ.aw.Sw", true},
		{"secret.YQ.aw.*", "secret.YQ.aw", false},
		{"secret.YQ.aw.*", "secret.YQ.aw.Sw.x", false},
		{"secret.YQ.aw.*", "secret.YQ.ax.Sw", false},
		{"msg.YQ.*.*", "msg.YQ.aw.0000000000000001", true},
		{"msg.YQ.*.*", "meta.YQ.aw", false},
		{"meta.YQ.*", "meta.YQ.aw", true},
		{"meta.YQ.*", "meta.YQx.aw", false},
		{"meta.YQ.aw", "meta.YQ.aw", true},
		{"meta.YQ.aw", "meta.YQ.awx", false},
		{"meta.YQ", "meta.YQ.aw", false},
		{"task.>", "task.x.y", true},
		{"task.>", "task.x", true},
		{"task.>", "task", false},
		{"*", "task", true},
		{"*", "task.x", false},
		{">", "task.x", true},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.filter, tt.subject); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tt.filter, tt.subject, got, tt.want)
		}
	}
}

// TestUnsettledIsUnavailable: a listing whose keys kept changing, or whose
// replica stayed behind, for the whole bound is a moment's outage, which
// callers try again (store.ErrUnavailable), not a failure. The store's
// conformance run on a replicated bucket once failed on it: "instances:
// store: instances of agent "a": the keys msg.YQ.*.* kept changing while
// they were read, or the replica that answered stayed behind its leader,
// for 5s", with eight writers busy on the agent's instances.
func TestUnsettledIsUnavailable(t *testing.T) {
	err := unsettled([]string{"msg.YQ.*.*"})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown) {
		t.Errorf("unsettled = %v; want it to match store.ErrUnavailable only", err)
	}
	const want = "the keys msg.YQ.*.* kept changing while they were read, or the replica that answered stayed behind its leader, for 5s: no read of them was whole"
	if err.Error() != want {
		t.Errorf("unsettled = %q\nwant        %q", err, want)
	}
}
