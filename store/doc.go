// Package store persists Ganglion's instances: each instance's message
// history, its [Meta] (turn count, next sequence number, timestamps), the
// state its extensions keep and the secrets given to it. The runtime loads
// an instance when it first needs it, and after each turn commits what
// changed as one [Batch], applied atomically.
//
// [Store] is the interface the runtime consumes. Three implementations
// ship: [NewMemory], plain maps for tests, benchmarks and one-shot runs;
// [OpenBadger], a Badger key-value database on disk, the default of one
// process; and [OpenJetStream], a NATS JetStream key-value bucket that
// several processes share (its own layout is in its doc). All three pass
// one conformance suite.
//
// # Names
//
// An instance is named by its agent and its key; extension state also by the
// extension, a secret by its name. Agent, extension and secret names match
// [a-zA-Z0-9_.-]{1,64} (environment-variable names like OPENAI_API_KEY fit);
// an instance key is 1 to 256 bytes of valid UTF-8 without NUL. Every store
// method refuses other names with an error that matches [ErrInvalidName].
// A new instance key must also pass [ValidateInstanceKey], which refuses
// what would mislead a path, a URL, a NATS subject or a person reading a
// listing; the runtime applies it to every key from outside, and the store
// keeps the looser rule so that instances stored before it stay readable.
//
// # Key layout
//
// This is the one description of the keys [OpenBadger]'s store writes; keys.go encodes
// and decodes them. NUL (\x00) separates the parts of a key, which is why
// names cannot contain it. Sequence numbers are 8 bytes big-endian, so
// byte order is Seq order.
//
//	key                                          value
//	---------------------------------------------------------------------------
//	v                                            schema version, JSON number (1)
//	i \x00 <agent> \x00 <key>                    instance Meta, JSON
//	f \x00 <agent> \x00 <key>                    the instance's latest fence, 8 bytes big-endian
//	m \x00 <agent> \x00 <key> \x00 <seq:8>       one Record, JSON (Seq included)
//	s \x00 <agent> \x00 <key> \x00 <extension>   extension state, verbatim bytes
//	c \x00 <agent> \x00 <key> \x00 <name>        sealed secret, verbatim bytes
//	p \x00 <id>                                 one PendingRecord, JSON
//	t \x00 <id>                                 one TaskRecord, JSON
//
// All the keys of one agent and kind share the prefix "<kind>\x00<agent>\x00",
// which no other agent's keys start with (agent "a" ends its prefix with a
// NUL, where agent "ab" has a "b"), so listing an agent's instances reads
// only that agent's keys. An instance's messages share the prefix
// "m\x00<agent>\x00<key>\x00" and are read in Seq order by one scan.
//
// The t and f keys, like the c keys below, came after schema version 1
// without changing it: older builds never read them.
//
// A database without the version key is taken as new only if it is empty;
// a database with another version is refused.
//
// # Secrets
//
// A secret (an API key a human gives a paused agent, say) is stored as the
// caller hands it over: sealed, that is encrypted and authenticated, by the
// runtime before it reaches the store, so neither the memory store nor the
// Badger files ever hold its plaintext. The store does not read the sealed bytes.
//
// Secrets belong to an instance but do not make it exist: [Store.Instances]
// does not scan the c keys, so an instance with secrets and nothing else is
// not listed, and LoadInstance does not find it. The c keys came after
// schema version 1 without changing it: a build that predates them never
// reads them, since it looks keys up only by its own kinds' prefixes.
//
// # Concurrency
//
// Every implementation is safe for concurrent use. A commit is atomic: a
// concurrent LoadInstance sees all of a batch or none of it. Commits to the
// same instance are not ordered by the store; the runtime runs one turn at a
// time per instance.
//
// # Fencing
//
// Where several processes share a store, one owns an instance at a time, by
// a lease that expires (see the runtime's cluster mode). A lease alone
// cannot stop an owner that stalled past it from committing afterwards,
// over what the next owner wrote. So whoever takes an instance over first
// takes its fence ([Store.Fence]), then loads it, and commits with that
// fence in [Batch.Fence]; the store applies a batch only while its fence is
// the instance's latest, atomically with the batch, and refuses it with
// [ErrFenced] once a later one was taken. A single process owning its store
// leaves Fence zero and commits unconditionally.
package store
