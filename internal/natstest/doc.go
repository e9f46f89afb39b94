// Package natstest starts NATS servers with JetStream inside tests, on
// loopback: the cluster mode's store, leases and routing are tested
// against the real server, not a fake.
package natstest
