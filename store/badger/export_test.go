package badger

import (
	"context"
	"time"

	"github.com/ganglion-dev/ganglion/store"
)

// backend returns the *badgerStore of a store this package opened.
func backend(s store.Store) *badgerStore {
	return s.(interface{ Backend() store.Backend }).Backend().(*badgerStore)
}

// OpenInMemory opens the Badger store in memory for the external
// tests: see openInMemory.
func OpenInMemory(opts ...Option) (store.Store, error) {
	s, err := openInMemory(opts...)
	if err != nil {
		return nil, err
	}
	return store.Checked(s), nil
}

// BadgerSizes returns the memtable and block cache sizes Badger runs a
// store of Open with.
func BadgerSizes(s store.Store) (memTable, blockCache int64) {
	o := backend(s).db.Opts()
	return o.MemTableSize, o.BlockCacheSize
}

// WithValueLog sets the value log's file size and how often it is
// collected, for the tests of collectValueLog.
func WithValueLog(fileSize int64, gcEvery time.Duration) Option {
	return badgerOptionFunc(func(c *badgerConfig) { c.valueLogFileSize, c.valueLogGCEvery = fileSize, gcEvery })
}

// GCValueLog runs one collection of the value log now: see gcValueLog.
func GCValueLog(s store.Store) (rewritten int, err error) {
	return backend(s).gcValueLog(context.Background())
}

// FlattenBadger compacts all of Badger's tables into one level, which
// counts the value log's garbage.
func FlattenBadger(s store.Store) error {
	return backend(s).db.Flatten(2)
}
