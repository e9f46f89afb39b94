package store

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// memoryStore is the [Store] of [NewMemory]: see there.
type memoryStore struct {
	closed  atomic.Bool // fast path; mu guards the truth
	mu      sync.RWMutex
	agents  map[string]map[string]*memInstance // agent → instance key → instance
	pending map[string]PendingRecord           // pending items by ID
	tasks   map[string]PendingRecord           // delegation tasks by ID (as TaskRecord)
	// secrets are kept apart from agents so that they do not make an
	// instance exist (see Store.Instances). No inner map is empty.
	secrets map[instanceID]map[string][]byte // instance → name → sealed value
	fences  map[instanceID]uint64            // the latest fence of each instance
}

// instanceID names an instance.
type instanceID struct{ agent, key string }

// chunkLen is the length of a full chunk of records. Keeping an instance's
// history in chunks rather than one slice spares a growing instance the copy
// of its whole history, and the garbage collector the discarded copies.
const chunkLen = 64

// memInstance is what Memory keeps for one instance. It is removed from its
// agent's map when it holds nothing.
type memInstance struct {
	meta    Meta
	hasMeta bool
	// chunks hold the records ordered by Seq, without duplicates: every chunk
	// is non-empty and ends below the next one's first Seq.
	chunks [][]Record
	n      int // number of records
	state  map[string][]byte
}

func (in *memInstance) empty() bool {
	return !in.hasMeta && in.n == 0 && len(in.state) == 0
}

// put inserts r or replaces the record with its Seq. Appending a Seq above
// the last one, the usual case, is O(1) amortised and copies no record.
func (in *memInstance) put(r Record) {
	k := len(in.chunks)
	if k == 0 {
		// A first chunk starts small: most instances are short.
		in.chunks = append(in.chunks, append(make([]Record, 0, 2), r))
		in.n++
		return
	}
	if last := in.chunks[k-1]; last[len(last)-1].Seq < r.Seq {
		if len(last) < chunkLen {
			in.chunks[k-1] = append(last, r)
		} else {
			in.chunks = append(in.chunks, append(make([]Record, 0, chunkLen), r))
		}
		in.n++
		return
	}
	ci, i, found := in.search(r.Seq) // ci < k: r.Seq is not above the last
	c := in.chunks[ci]
	if found {
		c[i] = r
		return
	}
	in.n++
	if len(c) < chunkLen {
		in.chunks[ci] = slices.Insert(c, i, r)
		return
	}
	// Split the full chunk, then insert into the half r belongs to.
	const half = chunkLen / 2
	right := append(make([]Record, 0, chunkLen), c[half:]...)
	clear(c[half:])
	left := c[:half]
	if i <= half {
		left = slices.Insert(left, i, r)
	} else {
		right = slices.Insert(right, i-half, r)
	}
	in.chunks[ci] = left
	in.chunks = slices.Insert(in.chunks, ci+1, right)
}

// delete removes the record with seq, if any.
func (in *memInstance) delete(seq uint64) {
	ci, i, found := in.search(seq)
	if !found {
		return
	}
	in.n--
	if c := slices.Delete(in.chunks[ci], i, i+1); len(c) > 0 {
		in.chunks[ci] = c
	} else {
		in.chunks = slices.Delete(in.chunks, ci, ci+1)
	}
}

// search finds where seq is or would go: chunk ci, index i in it. When seq
// is above every record, ci is len(in.chunks).
func (in *memInstance) search(seq uint64) (ci, i int, found bool) {
	ci = sort.Search(len(in.chunks), func(j int) bool {
		c := in.chunks[j]
		return c[len(c)-1].Seq >= seq
	})
	if ci == len(in.chunks) {
		return ci, 0, false
	}
	c := in.chunks[ci]
	i = sort.Search(len(c), func(j int) bool { return c[j].Seq >= seq })
	return ci, i, c[i].Seq == seq
}

// records returns a copy of the records, or nil if there are none.
func (in *memInstance) records() []Record {
	if in.n == 0 {
		return nil
	}
	out := make([]Record, 0, in.n)
	for _, c := range in.chunks {
		out = append(out, c...)
	}
	return out
}

// NewMemory returns an empty [Store] that keeps everything in maps and
// loses it on exit. It serves tests, benchmarks and one-shot runs.
//
// It keeps records as they come, with their message pointers, and
// encodes nothing, so a commit costs a few map lookups and an append, and a
// message is not copied. The price is that a stored [pipeline.Message] is
// the caller's: callers must treat a message as immutable once committed,
// and must not change one returned by LoadInstance. State
// values and sealed secrets are copied in and out, since callers reuse byte
// buffers.
//
// It checks names as every store does, but since it does not encode, it
// accepts a message that JSON cannot encode (say, a NaN in Metadata), which
// Badger refuses.
//
// # Concurrency
//
// It is safe for concurrent use. One read-write lock guards it: loads
// run in parallel, commits one at a time.
func NewMemory() Store {
	return checkedStore{&memoryStore{agents: make(map[string]map[string]*memInstance)}}
}

// begin fails once the store is closed. The methods check again under
// m.mu, since close may come in between.
func (m *memoryStore) Begin() error {
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (m *memoryStore) End() {}

// lookup returns the instance, or nil. m.mu must be held.
func (m *memoryStore) lookup(agent, key string) *memInstance {
	return m.agents[agent][key]
}

// obtain returns the instance, creating it. m.mu must be held for writing.
func (m *memoryStore) obtain(agent, key string) *memInstance {
	instances := m.agents[agent]
	if instances == nil {
		instances = make(map[string]*memInstance)
		m.agents[agent] = instances
	}
	in := instances[key]
	if in == nil {
		in = &memInstance{}
		instances[key] = in
	}
	return in
}

// prune forgets the instance if it holds nothing. m.mu must be held for writing.
func (m *memoryStore) prune(agent, key string, in *memInstance) {
	if !in.empty() {
		return
	}
	instances := m.agents[agent]
	delete(instances, key)
	if len(instances) == 0 {
		delete(m.agents, agent)
	}
}

// LoadInstance implements [Store.LoadInstance]. The returned slice is the
// caller's; the messages in it share their slices and maps with the stored
// ones.
func (m *memoryStore) LoadInstance(ctx context.Context, agent, key string) (Meta, []Record, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return Meta{}, nil, false, ErrClosed
	}
	in := m.lookup(agent, key)
	if in == nil || !in.hasMeta && in.n == 0 {
		return Meta{}, nil, false, nil
	}
	return in.meta, in.records(), true, nil
}

// LoadMeta implements [Store.LoadMeta].
func (m *memoryStore) LoadMeta(ctx context.Context, agent, key string) (Meta, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return Meta{}, false, ErrClosed
	}
	in := m.lookup(agent, key)
	if in == nil || !in.hasMeta {
		return Meta{}, false, nil
	}
	return in.meta, true, nil
}

// Commit implements [Store.Commit]. It stores the batch's records by value: see
// [NewMemory] on immutability.
func (m *memoryStore) Commit(ctx context.Context, agent, key string, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		return ErrClosed
	}
	if b.Empty() {
		return nil
	}
	if b.Fence != 0 && b.Fence != m.fences[instanceID{agent, key}] {
		return Fenced(agent, key, b.Fence)
	}
	in := m.obtain(agent, key)
	for _, r := range b.Put {
		in.put(r)
	}
	for _, seq := range b.Delete {
		in.delete(seq)
	}
	if b.Meta != nil {
		in.meta, in.hasMeta = *b.Meta, true
	}
	for ext, v := range b.State {
		switch {
		case v == nil:
			delete(in.state, ext)
		case in.state == nil:
			in.state = map[string][]byte{ext: bytes.Clone(v)}
		default:
			in.state[ext] = bytes.Clone(v)
		}
	}
	m.prune(agent, key, in)
	for _, id := range b.DeleteTasks {
		delete(m.tasks, id)
	}
	m.putTasks(b.Tasks)
	if len(b.Pending) > 0 && m.pending == nil {
		m.pending = map[string]PendingRecord{}
	}
	for _, r := range b.Pending {
		r.Data = bytes.Clone(r.Data) // callers reuse buffers
		m.pending[r.ID] = r
	}
	return nil
}

// Fence implements [Store.Fence].
func (m *memoryStore) Fence(ctx context.Context, agent, key string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		return 0, ErrClosed
	}
	if m.fences == nil {
		m.fences = map[instanceID]uint64{}
	}
	id := instanceID{agent, key}
	m.fences[id]++
	return m.fences[id], nil
}

// Instances implements [Store.Instances]. It returns nil when agent has no
// instance.
func (m *memoryStore) Instances(ctx context.Context, agent string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return nil, ErrClosed
	}
	return slices.Sorted(maps.Keys(m.agents[agent])), nil
}

// GetState implements [Store.GetState]. The returned slice is a copy.
func (m *memoryStore) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return nil, ErrClosed
	}
	in := m.lookup(agent, key)
	if in == nil {
		return nil, nil
	}
	v, ok := in.state[extension]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}

// PutSecret implements [Store.PutSecret]. It stores a copy of sealed.
func (m *memoryStore) PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error {
	sealed = bytes.Clone(sealed)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		return ErrClosed
	}
	id := instanceID{agent, key}
	if m.secrets == nil {
		m.secrets = make(map[instanceID]map[string][]byte)
	}
	if m.secrets[id] == nil {
		m.secrets[id] = make(map[string][]byte)
	}
	m.secrets[id][name] = sealed
	return nil
}

// GetSecret implements [Store.GetSecret]. The returned slice is a copy.
func (m *memoryStore) GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return nil, false, ErrClosed
	}
	v, ok := m.secrets[instanceID{agent, key}][name]
	return bytes.Clone(v), ok, nil
}

// ListSecrets implements [Store.ListSecrets].
func (m *memoryStore) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return nil, ErrClosed
	}
	return slices.Sorted(maps.Keys(m.secrets[instanceID{agent, key}])), nil
}

// Close drops everything the store holds. Later calls, Close included, fail
// with [ErrClosed].
func (m *memoryStore) Close() error {
	if m.closed.Swap(true) {
		return ErrClosed
	}
	m.mu.Lock()
	m.agents = nil
	m.secrets = nil
	m.mu.Unlock()
	return nil
}

var _ Backend = (*memoryStore)(nil)
