package cluster

import (
	"context"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// openedNode makes the node of the next runtime made reachable: *np is it
// once the runtime is made.
func openedNode(t *testing.T) (np **node) {
	t.Helper()
	open := seam.Cluster
	np = new(*node)
	seam.Cluster = func(ctx context.Context, env seam.ClusterEnv) (seam.Placement, store.Store, error) {
		p, st, err := open(ctx, env)
		if err == nil {
			*np = p.(*node)
		}
		return p, st, err
	}
	t.Cleanup(func() { seam.Cluster = open })
	return np
}

// cached returns agent's instance key, which is in the runtime's memory.
func (n *node) cached(t *testing.T, agent, key string) seam.Held {
	t.Helper()
	in, unhold := n.l.Cached(agent, key)
	if in == nil {
		t.Fatalf("%s/%s is not in memory", agent, key)
	}
	unhold()
	return in
}

// textModel answers every turn of agent a with one text.
func textModel(t *testing.T) *scripted.Model {
	t.Helper()
	m, err := scripted.Parse("script.yaml", []byte("agents:\n  a:\n    turns:\n      - match: \".\"\n        steps: [{text: done}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
