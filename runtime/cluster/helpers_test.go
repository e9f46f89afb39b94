package cluster

import (
	"context"
	"io"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/model"
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

// textModel answers every request with one text.
type textModel struct{}

func (textModel) Stream(context.Context, *model.Request) (model.Stream, error) {
	return &textStream{chunks: []model.Chunk{{Kind: model.KindText, Text: "Earlier: facts."}}}, nil
}

type textStream struct{ chunks []model.Chunk }

func (s *textStream) Recv() (model.Chunk, error) {
	if len(s.chunks) == 0 {
		return model.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *textStream) Close() error { return nil }
