package config

import (
	"github.com/dustin/go-humanize"

	"github.com/ganglion-dev/ganglion/store"
)

// Store sizes the badger store of the data directory.
type Store struct {
	// MemtableSize: a size, at least 8MiB (default). A step whose messages
	// take over about 15 % of it fails, writing nothing.
	MemtableSize string `yaml:"memtable_size"`
	// BlockCacheSize: a size, at least 1MiB (default).
	BlockCacheSize string `yaml:"block_cache_size"`
}

// Options returns the [store.OpenBadger] options of a valid s; nil: none.
func (s *Store) Options() []store.BadgerOption {
	if s == nil {
		return nil
	}
	var opts []store.BadgerOption
	if n, _ := ParseSize("memtable_size", s.MemtableSize); n > 0 {
		opts = append(opts, store.WithMemTableSize(int64(n)))
	}
	if n, _ := ParseSize("block_cache_size", s.BlockCacheSize); n > 0 {
		opts = append(opts, store.WithBlockCacheSize(int64(n)))
	}
	return opts
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
	}{{"memtable_size", s.MemtableSize, store.MinMemTableSize}, {"block_cache_size", s.BlockCacheSize, store.MinBlockCacheSize}} {
		n, err := ParseSize(size.field, size.val)
		switch {
		case err != nil:
			v.errorf("$.store."+size.field, "store: %v", err)
		case n != 0 && int64(n) < size.least:
			v.errorf("$.store."+size.field, "store: %s must be at least %s, got %q", size.field, humanize.IBytes(uint64(size.least)), size.val)
		}
	}
}
