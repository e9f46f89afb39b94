// Package store persists Ganglion's instances: each instance's message
// history, its [Meta] (turn count, next sequence number, timestamps) and the
// state its extensions keep. The runtime loads an instance when it first
// needs it, and after each turn commits what changed as one [Batch], applied
// atomically.
//
// [Store] is the interface the runtime consumes. Two implementations ship:
// [Memory], plain maps for tests, benchmarks and one-shot runs, and
// [Badger], a Badger key-value database on disk ([OpenBadger]) or in memory
// ([OpenBadgerInMemory]).
//
// # Names
//
// An instance is named by its agent and its key; extension state also by the
// extension. Agent and extension names match [a-zA-Z0-9_.-]{1,64}; an
// instance key is 1 to 256 bytes of valid UTF-8 without NUL. Every store
// method refuses other names with an error from [ValidateName] or
// [ValidateInstanceKey], which the runtime can call itself to check names
// early.
//
// # Key layout
//
// This is the one description of the keys [Badger] writes; keys.go encodes
// and decodes them. NUL (\x00) separates the parts of a key, which is why
// names cannot contain it. Sequence numbers are 8 bytes big-endian, so
// byte order is Seq order.
//
//	key                                          value
//	---------------------------------------------------------------------------
//	v                                            schema version, JSON number (1)
//	i \x00 <agent> \x00 <key>                    instance Meta, JSON
//	m \x00 <agent> \x00 <key> \x00 <seq:8>       one Record, JSON (Seq included)
//	s \x00 <agent> \x00 <key> \x00 <extension>   extension state, verbatim bytes
//	p \x00 <id>                                 one PendingRecord, JSON
//
// All the keys of one agent and kind share the prefix "<kind>\x00<agent>\x00",
// which no other agent's keys start with (agent "a" ends its prefix with a
// NUL, where agent "ab" has a "b"), so listing an agent's instances reads
// only that agent's keys. An instance's messages share the prefix
// "m\x00<agent>\x00<key>\x00" and are read in Seq order by one scan.
//
// A database without the version key is taken as new only if it is empty;
// a database with another version is refused.
//
// # Concurrency
//
// Every implementation is safe for concurrent use. A commit is atomic: a
// concurrent LoadInstance sees all of a batch or none of it. Commits to the
// same instance are not ordered by the store; the runtime runs one turn at a
// time per instance.
package store
