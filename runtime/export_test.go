package runtime

import "github.com/ganglion-dev/ganglion/runtime/internal/engine"

// QueuedTurns reports how many turns of the instance are waiting for its
// slot: the Sends blocked behind the running turn. Tests poll it to send the
// next turn only once the previous one has queued.
func QueuedTurns(r *Runtime, agent, instanceKey string) int {
	in, ok := r.cache.Peek(instanceID{Agent: agent, Key: instanceKey})
	if !ok {
		return 0
	}
	return in.Waiting()
}

// CachedInstances reports how many instances the runtime keeps in memory.
func CachedInstances(r *Runtime) int {
	return r.cache.Len()
}

// HasDeadline reports whether the expiry loop has a deadline to wait for:
// a pending item it would expire.
func HasDeadline(r *Runtime) bool {
	_, ok := r.pauses.NextDeadline()
	return ok
}

// MetaAwaits is the metadata key of a tool result that waits for a
// pending item (interrupt.go), for the crash tests.
const MetaAwaits = engine.MetaAwaits
