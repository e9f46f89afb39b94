// Package store persists Ganglion's instances: each instance's message
// history, its [Meta] (turn count, next sequence number, timestamps), the
// state its extensions keep and the secrets given to it. The runtime loads
// an instance when it first needs it, and after each turn commits what
// changed as one [Batch], applied atomically.
//
// [Store] is the interface the runtime consumes. This package holds it,
// its records and the rules of its names, and [NewMemory], plain maps for
// tests, benchmarks and one-shot runs; it links no module but the
// standard library. The stores that keep data elsewhere are packages of
// their own, so that a program links only the one it opens:
// store/badger, a Badger key-value database on disk, the default of one
// process; and store/jetstream, a NATS JetStream key-value bucket that
// several processes share. All three pass one conformance suite, package
// store/storetest.
//
// # Writing a store
//
// A store implements [Backend], where its data is kept, and returns the
// [Store] of [Checked], which applies the checks every store shares (a
// closed store, names, records and batches, a done context) before its
// backend sees a call, so that every store refuses alike. It refuses a
// commit whose fence is not the instance's latest with [Fenced]'s error.
// Its tests run storetest.Run.
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
// # Secrets
//
// A secret (an API key a human gives a paused agent, say) is stored as the
// caller hands it over: sealed, that is encrypted and authenticated, by the
// runtime before it reaches the store, so no store ever holds its
// plaintext. The store does not read the sealed bytes.
//
// Secrets belong to an instance but do not make it exist: [Store.Instances]
// does not list an instance with secrets and nothing else, and
// LoadInstance does not find it.
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
