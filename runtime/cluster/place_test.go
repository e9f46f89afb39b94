package cluster

import (
	"fmt"
	"testing"
)

// TestPlaceSpreadsAndAgrees: instances nobody owns spread evenly over the
// live processes, whose names differ only at their end, as nodeName makes
// them; every process places an instance on the same one; and a process
// leaving moves only the instances it had.
func TestPlaceSpreadsAndAgrees(t *testing.T) {
	live := []string{"host-4242-AbC123", "host-4242-AbC124", "host-4242-Zz0001"}
	a := &node{name: live[0], live: live}
	b := &node{name: live[2], live: live}
	const n = 3000
	count := map[string]int{}
	before := map[string]string{}
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		p := a.place("worker", key)
		if q := b.place("worker", key); q != p {
			t.Fatalf("worker/%s: placed on %s by one process, %s by another", key, p, q)
		}
		count[p]++
		before[key] = p
	}
	for _, p := range live {
		if share := float64(count[p]) / n; share < 0.28 || share > 0.39 {
			t.Errorf("%s got %.0f%% of the instances: %v", p, 100*share, count)
		}
	}
	gone := &node{name: live[0], live: live[:2]} // the third left
	for key, p := range before {
		if q := gone.place("worker", key); p != live[2] && q != p {
			t.Fatalf("worker/%s moved from %s to %s though its process stayed", key, p, q)
		}
	}
}
