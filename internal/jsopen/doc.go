// Package jsopen creates the JetStream streams and key-value buckets of
// Ganglion (the store's, and the cluster mode's leases, members, waits and
// counters) the same way everywhere: bounded when the caller gives no
// deadline, and tried again while the cluster cannot place them only
// because one of its servers looks offline for a moment.
package jsopen
