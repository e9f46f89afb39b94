// Package jetstream is the store several processes share: a [store.Store]
// kept in one NATS JetStream key-value bucket, which [Open] opens (and
// creates) on the server a NATS connection reaches. The runtime's cluster
// mode opens it; its layout, atomicity, limits and errors are in [Open]'s
// documentation.
//
//	nc, err := nats.Connect(url)
//	...
//	s, err := jetstream.Open(ctx, nc, "ganglion", jetstream.WithReplicas(3))
//
// It needs NATS server 2.12 or later (atomic batch publish). Its options
// set the bucket's replicas ([WithReplicas]) and bound each request to
// the server ([WithRequestTimeout]).
package jetstream
