// Package cluster runs one set of agents on several processes over NATS
// JetStream (the config's cluster block). A program links it by importing
// it:
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/cluster"
//
// The CLI does; a program that does not links no NATS client, and a config
// with a cluster block fails at load with that import to add.
//
// Each instance is owned by one process at a time, the one holding its
// lease: a turn, a human's action or a child task's report sent through
// any process goes to the owner, and one nobody owns runs where it was
// asked for, or, when the runtime started it (a delegation, an agent
// call), on the live process its name hashes to. A process that dies loses
// its leases within their TTL, and the others take its instances and tasks
// over. Every commit of an owned instance carries the fence taken with its
// lease, so that a process that stalled past its lease cannot write over
// its successor. The store is the JetStream store every process shares
// (package store/jetstream), unless the runtime was given one.
//
// The package has no API of its own: it is the runtime's placement
// (RATIONALE.md, "The placement seam, and the cluster behind it"), and its
// behaviour is documented with cluster mode in the README.
package cluster
