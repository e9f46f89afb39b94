package tokens

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
)

// Limits of the piece cache.
const (
	// maxCached bounds the pieces kept: far more than the words of a
	// language in use, a few MB at most. A full cache starts again empty:
	// the pieces in use come back at once.
	maxCached = 1 << 17
	// maxPiece is the longest piece kept: a long piece (a base64 blob, a
	// run of symbols) rarely comes again.
	maxPiece = 64
)

// cache keeps the token counts of pieces. Reads take no lock: they look in
// a map that is never written once published. New pieces wait in a small
// map under a lock, and are published with the others, in a new map, when
// they are a quarter as many: each piece is copied a bounded number of
// times, and a piece seen again is found without a lock.
type cache struct {
	published atomic.Pointer[map[string]int32]

	mu      sync.Mutex
	pending map[string]int32 // pieces not published yet
}

func (c *cache) get(p string) (int, bool) {
	if m := c.published.Load(); m != nil {
		if n, ok := (*m)[p]; ok {
			return int(n), true
		}
	}
	if len(p) > maxPiece {
		return 0, false
	}
	c.mu.Lock()
	n, ok := c.pending[p]
	c.mu.Unlock()
	return int(n), ok
}

func (c *cache) put(p string, n int) {
	if len(p) > maxPiece {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[string]int32{}
	}
	c.pending[strings.Clone(p)] = int32(n) // not p: it would keep its whole text alive
	var old map[string]int32
	if m := c.published.Load(); m != nil {
		old = *m
	}
	if len(c.pending) < max(64, len(old)/4) {
		return
	}
	next := make(map[string]int32, len(old)+len(c.pending))
	if len(old)+len(c.pending) <= maxCached {
		maps.Copy(next, old)
	}
	maps.Copy(next, c.pending)
	c.published.Store(&next)
	c.pending = nil
}
