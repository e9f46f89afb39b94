package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// val is a cached value for the tests: its name, and whether it was made
// again.
type val struct {
	Cached[string]
	name string
}

func newTestCache(max int) (*Cache[string, *val], *[]string) {
	var dropped []string
	return NewCache(max, func(v *val) { dropped = append(dropped, v.name) }), &dropped
}

func (c *Cache[K, V]) keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []K
	for e := c.lru.Front(); e != nil; e = e.Next() {
		ks = append(ks, e.Value.(V).cached().key)
	}
	return ks
}

// TestCacheDropsTheLeastRecentlyUsedIdle: past its size, the cache drops
// the least recently used values nobody holds, tells evicted of each, and
// never drops a held one, so a key has one value at a time.
func TestCacheDropsTheLeastRecentlyUsedIdle(t *testing.T) {
	tests := []struct {
		name        string
		max         int
		run         func(c *Cache[string, *val])
		wantOrder   []string // most recently used first
		wantDropped []string
	}{
		{"within its size", 2, func(c *Cache[string, *val]) {
			c.Unhold(hold(c, "a"))
			c.Unhold(hold(c, "b"))
		}, []string{"b", "a"}, nil},
		{"past its size, the least recently used", 2, func(c *Cache[string, *val]) {
			c.Unhold(hold(c, "a"))
			c.Unhold(hold(c, "b"))
			c.Unhold(hold(c, "a")) // a used again: b is the oldest
			c.Unhold(hold(c, "c"))
		}, []string{"c", "a"}, []string{"b"}},
		{"a held value stays", 1, func(c *Cache[string, *val]) {
			a := hold(c, "a")
			c.Unhold(hold(c, "b"))
			c.Unhold(hold(c, "c"))
			_ = a // still held
		}, []string{"a"}, []string{"b", "c"}},
		{"dropped once nobody holds it", 1, func(c *Cache[string, *val]) {
			a := hold(c, "a")
			a2 := hold(c, "a")
			c.Unhold(hold(c, "b")) // b is dropped: a is held
			c.Unhold(a)
			c.Unhold(a2)
		}, []string{"a"}, []string{"b"}},
		{"Held neither makes nor reorders", 2, func(c *Cache[string, *val]) {
			c.Unhold(hold(c, "a"))
			c.Unhold(hold(c, "b"))
			if _, ok := c.Held("z"); ok {
				panic("Held made z")
			}
			v, _ := c.Held("a")
			c.Unhold(v)
			c.Unhold(hold(c, "c")) // a is still the least recently used
		}, []string{"c", "b"}, []string{"a"}},
		{"Clear drops all, untold", 4, func(c *Cache[string, *val]) {
			hold(c, "a")
			c.Unhold(hold(c, "b"))
			c.Clear()
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dropped := newTestCache(tt.max)
			tt.run(c)
			if !slices.Equal(c.keys(), tt.wantOrder) || c.Len() != len(tt.wantOrder) {
				t.Errorf("cached %v (%d), want %v", c.keys(), c.Len(), tt.wantOrder)
			}
			if !slices.Equal(*dropped, tt.wantDropped) {
				t.Errorf("dropped %v, want %v", *dropped, tt.wantDropped)
			}
		})
	}
}

func hold(c *Cache[string, *val], key string) *val {
	return c.Hold(key, func() *val { return &val{name: key} })
}

// TestCacheMakesOneValuePerKey: a key's value is made once while the cache
// has it, and again once it was dropped.
func TestCacheMakesOneValuePerKey(t *testing.T) {
	c, _ := newTestCache(0)
	a := hold(c, "a")
	if b := hold(c, "a"); b != a {
		t.Fatal("a second Hold made a second value")
	}
	if v, ok := c.Peek("a"); !ok || v != a {
		t.Fatalf("Peek = %v, %v; want the held value", v, ok)
	}
	c.Unhold(a)
	c.Unhold(a)
	if _, ok := c.Peek("a"); ok {
		t.Fatal("an idle value past the cache's size (0) was kept")
	}
	if b := hold(c, "a"); b == a {
		t.Fatal("the dropped value came back")
	}
}

// TestSlot: one holder at a time; a waiter counts in Waiting until it gets
// the slot or its ctx ends.
func TestSlot(t *testing.T) {
	var s Slot
	s.Init()
	if !s.TryAcquire() {
		t.Fatal("TryAcquire of a free slot failed")
	}
	if s.TryAcquire() {
		t.Fatal("TryAcquire of a held slot succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a held slot = %v, want the ctx's end", err)
	}
	got := make(chan error)
	go func() { got <- s.Acquire(context.Background()) }()
	for s.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	s.Release()
	if err := <-got; err != nil {
		t.Fatalf("the waiter's Acquire = %v", err)
	}
	if s.Waiting() != 0 {
		t.Fatalf("Waiting = %d once the waiter has the slot, want 0", s.Waiting())
	}
	s.Release()
}
