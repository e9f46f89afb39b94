// Package cluster is the README's cluster mode example: ganglion.yaml, a
// lead that delegates to a researcher and a writer in parallel, on the
// scripted model, with a cluster block whose NATS URL comes from
// GANGLION_NATS_URL. Its test runs it on two processes' runtimes sharing a
// NATS server embedded in the test.
package cluster
