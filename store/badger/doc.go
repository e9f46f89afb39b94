// Package badger is the store of one process: a [store.Store] kept in a
// Badger key-value database in a directory on disk, which [Open] opens.
// It is the runtime's default. Its options size Badger's memory
// ([WithMemTableSize], [WithBlockCacheSize]), choose durability
// ([WithSyncWrites]) and route Badger's log ([WithLogger]).
//
//	s, err := badger.Open(".ganglion/data", badger.WithSyncWrites(true))
//
// Only one process holds a directory: a second [Open] fails with an error
// matching [ErrInUse]. Records, meta and the schema version are stored as
// JSON, state and sealed secrets verbatim.
//
// # Key layout
//
// This is the one description of the keys [Open]'s store writes; keys.go
// encodes and decodes them. NUL (\x00) separates the parts of a key, which is why
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
// The c keys, like the t and f keys, came after schema version 1 without
// changing it: a build that predates them never reads them, since it looks
// keys up only by its own kinds' prefixes. [store.Store.Instances] does not
// scan the c keys, so an instance with secrets and nothing else is not
// listed.
package badger
