// Package coord holds what lets several processes run one set of agents
// over NATS JetStream: leases, which give each instance one owning process
// at a time; the wait-for graph of agent requests (Waits); and counters
// every process adds to (Counters), which count task budgets.
//
// A lease is a key of a key-value bucket whose value names its owner and
// whose message carries a time to live (JetStream per-message TTL, server
// 2.11 or later): the owner renews it well within the TTL, and a process
// that dies stops renewing, so its leases expire and another process can
// take the instances over. Acquiring is a create that fails if the key
// exists; renewing and releasing are conditional on the revision the
// owner last wrote, so a process that lost its lease (it paused past the
// TTL and another took over) learns so at its next renewal, and never
// overwrites the new owner's.
//
// Every request to NATS here is bounded (5 s) whatever the
// caller's ctx: a server that dies with a request in flight never
// answers it, and a caller must learn so.
package coord
