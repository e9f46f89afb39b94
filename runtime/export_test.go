package runtime

// QueuedTurns reports how many turns of the instance are waiting for its
// slot: the Sends blocked behind the running turn. Tests poll it to send the
// next turn only once the previous one has queued.
func QueuedTurns(r *Runtime, agent, instanceKey string) int {
	r.cache.mu.Lock()
	in := r.cache.instances[instanceID{agent, instanceKey}]
	r.cache.mu.Unlock()
	if in == nil {
		return 0
	}
	return int(in.waiting.Load())
}

// CachedInstances reports how many instances the runtime keeps in memory.
func CachedInstances(r *Runtime) int {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return len(r.cache.instances)
}

// HasDeadline reports whether the expiry loop has a deadline to wait for:
// a pending item it would expire.
func HasDeadline(r *Runtime) bool {
	_, ok := r.nextDeadline()
	return ok
}

// MetaAwaits is the metadata key of a tool result that waits for a
// pending item (interrupt.go), for the crash tests.
const MetaAwaits = metaAwaits
