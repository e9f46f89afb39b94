package runtime

// QueuedTurns reports how many turns of the instance are waiting for its
// slot: the Sends blocked behind the running turn. Tests poll it to send the
// next turn only once the previous one has queued.
func QueuedTurns(r *Runtime, agent, instanceKey string) int {
	r.mu.Lock()
	in := r.instances[instanceID{agent, instanceKey}]
	r.mu.Unlock()
	if in == nil {
		return 0
	}
	return int(in.waiting.Load())
}

// CachedInstances reports how many instances the runtime keeps in memory.
func CachedInstances(r *Runtime) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.instances)
}
