package coord

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestWaitsPath: edges recorded by two processes make one graph; a path
// follows them, and a removed edge breaks it.
func TestWaitsPath(t *testing.T) {
	ctx := context.Background()
	ncs, jss := connect(t, 2)
	var ws []*Waits
	for i := range 2 {
		w, err := OpenWaits(ctx, ncs[i], jss[i], "waits")
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	rmAB, err := ws[0].Add(ctx, "a/k", "b/k", 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws[1].Add(ctx, "b/k", "c/k", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := ws[1].Add(ctx, "b/k", "d/k", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		from, to string
		want     []string
	}{
		{"a/k", "c/k", []string{"a/k", "b/k", "c/k"}},
		{"a/k", "d/k", []string{"a/k", "b/k", "d/k"}},
		{"c/k", "a/k", nil},
		{"a/k", "a/k", []string{"a/k"}},
	}
	for _, tt := range tests {
		got, err := ws[1].Path(ctx, tt.from, tt.to)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Path(%s, %s) = %v, %v; want %v", tt.from, tt.to, got, err, tt.want)
		}
	}
	if err := rmAB(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := ws[1].Path(ctx, "a/k", "c/k"); err != nil || got != nil {
		t.Errorf("after the edge's removal: %v, %v; want no path", got, err)
	}
}
