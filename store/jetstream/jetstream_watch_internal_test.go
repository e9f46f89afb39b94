package jetstream

import "testing"

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
