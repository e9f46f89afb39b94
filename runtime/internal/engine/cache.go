package engine

import (
	"container/list"
	"sync"
)

// Cached is what a [Cache] keeps in each of its values, which embed it:
// its key, how many hold it, and its place in the order of use. The
// cache's lock guards it.
type Cached[K comparable] struct {
	key  K
	refs int
	elem *list.Element
}

func (c *Cached[K]) cached() *Cached[K] { return c }

// Cache keeps the instances in memory, by key: each is held by the turns
// and requests that use it, and past its size the least recently used
// ones nobody holds are dropped. A held value is never dropped, so there
// is never more than one value for a key; a dropped one is made again
// when it is next used.
//
// V is a pointer to a type that embeds [Cached].
type Cache[K comparable, V interface {
	comparable
	cached() *Cached[K]
}] struct {
	mu      sync.Mutex
	values  map[K]V
	lru     list.List // of V, most recently used first
	max     int
	evicted func(V)
}

// NewCache returns a cache of up to max values nobody holds; evicted is
// told of each value dropped, under the cache's lock.
func NewCache[K comparable, V interface {
	comparable
	cached() *Cached[K]
}](max int, evicted func(V)) *Cache[K, V] {
	return &Cache[K, V]{values: map[K]V{}, max: max, evicted: evicted}
}

// Hold returns key's value, made by newValue (under the cache's lock,
// before another goroutine sees it) if the cache has none, and holds it
// until [Cache.Unhold].
func (c *Cache[K, V]) Hold(key K, newValue func() V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[key]
	if !ok {
		v = newValue()
		e := v.cached()
		e.key = key
		c.values[key] = v
		e.elem = c.lru.PushFront(v)
	} else {
		c.lru.MoveToFront(v.cached().elem)
	}
	v.cached().refs++
	c.evictLocked()
	return v
}

// Held returns key's value, held until [Cache.Unhold], if the cache has
// it; its place in the order of use does not change.
func (c *Cache[K, V]) Held(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[key]
	if ok {
		v.cached().refs++
	}
	return v, ok
}

// Peek returns key's value, if the cache has it, without holding it.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[key]
	return v, ok
}

// Unhold lets the cache drop v again once nobody holds it.
func (c *Cache[K, V]) Unhold(v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v.cached().refs--
	c.evictLocked()
}

// Len returns how many values the cache has.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.values)
}

// Clear drops every value, without telling evicted: the runtime stops,
// and no turn runs any more.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.values)
	c.lru.Init()
}

// evictLocked drops the least recently used values nobody holds beyond
// the cache's size.
func (c *Cache[K, V]) evictLocked() {
	for e := c.lru.Back(); e != nil && len(c.values) > c.max; {
		prev := e.Prev()
		if v := e.Value.(V); v.cached().refs == 0 {
			k := v.cached().key
			if c.values[k] == v {
				delete(c.values, k)
			}
			c.lru.Remove(e)
			if c.evicted != nil {
				c.evicted(v)
			}
		}
		e = prev
	}
}
