// Package records holds what the store backends of store/badger and
// store/jetstream share about pending items and delegation tasks. The
// memory store, in package store itself, keeps its own copy, since
// package store cannot import this one.
package records
