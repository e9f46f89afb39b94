package config

import (
	"github.com/dustin/go-humanize"
)

// The least sizes the badger store takes (badger.MinMemTableSize and
// badger.MinBlockCacheSize, which a test holds these to): this package
// does not import the store, so that a program reading its configuration
// does not link Badger.
const (
	minMemtableSize   = 8 << 20
	minBlockCacheSize = 1 << 20
)

// Store sizes the badger store of the data directory.
type Store struct {
	// MemtableSize: a size, at least 8MiB (default). A step whose messages
	// take over about 15 % of it fails, writing nothing.
	MemtableSize string `yaml:"memtable_size"`
	// BlockCacheSize: a size, at least 1MiB (default).
	BlockCacheSize string `yaml:"block_cache_size"`
}

// Sizes returns the sizes s sets, in bytes: 0 for a size s leaves to the
// store's default, and both 0 for a nil s. The runtime opens the badger
// store with them. s must be valid (see [File.Validate]).
func (s *Store) Sizes() (memtable, blockCache int64) {
	if s == nil {
		return 0, 0
	}
	if n, _ := ParseSize("memtable_size", s.MemtableSize); n > 0 {
		memtable = int64(n)
	}
	if n, _ := ParseSize("block_cache_size", s.BlockCacheSize); n > 0 {
		blockCache = int64(n)
	}
	return memtable, blockCache
}

func (v *validator) store(s *Store) {
	if s == nil {
		return
	}
	if v.f.Cluster != nil {
		v.errorf("$.store", "store: sizes the badger store of the data directory, which a cluster does not use (its data is in JetStream)")
	}
	for _, size := range []struct {
		field, val string
		least      int64
	}{{"memtable_size", s.MemtableSize, minMemtableSize}, {"block_cache_size", s.BlockCacheSize, minBlockCacheSize}} {
		n, err := ParseSize(size.field, size.val)
		switch {
		case err != nil:
			v.errorf("$.store."+size.field, "store: %v", err)
		case n != 0 && int64(n) < size.least:
			v.errorf("$.store."+size.field, "store: %s must be at least %s, got %q", size.field, humanize.IBytes(uint64(size.least)), size.val)
		}
	}
}
