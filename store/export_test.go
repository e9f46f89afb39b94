package store

import (
	"context"
	"time"
)

// OpenBadgerInMemory opens the Badger store in memory for the external
// tests: see openBadgerInMemory.
func OpenBadgerInMemory(opts ...BadgerOption) (Store, error) {
	s, err := openBadgerInMemory(opts...)
	if err != nil {
		return nil, err
	}
	return checkedStore{s}, nil
}

// BadgerSizes returns the memtable and block cache sizes Badger runs a
// store of OpenBadger with.
func BadgerSizes(s Store) (memTable, blockCache int64) {
	o := s.(checkedStore).b.(*badgerStore).db.Opts()
	return o.MemTableSize, o.BlockCacheSize
}

// WithValueLog sets the value log's file size and how often it is
// collected, for the tests of collectValueLog.
func WithValueLog(fileSize int64, gcEvery time.Duration) BadgerOption {
	return badgerOptionFunc(func(c *badgerConfig) { c.valueLogFileSize, c.valueLogGCEvery = fileSize, gcEvery })
}

// GCValueLog runs one collection of the value log now: see gcValueLog.
func GCValueLog(s Store) (rewritten int, err error) {
	return s.(checkedStore).b.(*badgerStore).gcValueLog(context.Background())
}

// FlattenBadger compacts all of Badger's tables into one level, which
// counts the value log's garbage.
func FlattenBadger(s Store) error {
	return s.(checkedStore).b.(*badgerStore).db.Flatten(2)
}
