package config_test

import (
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// TestStoreMinimumsAreBadgers: the least sizes Validate takes are those
// the badger store takes, which this package does not import.
func TestStoreMinimumsAreBadgers(t *testing.T) {
	if config.MinMemtableSize != badger.MinMemTableSize || config.MinBlockCacheSize != badger.MinBlockCacheSize {
		t.Errorf("config takes a memtable of %d, a block cache of %d; badger %d, %d",
			config.MinMemtableSize, config.MinBlockCacheSize, badger.MinMemTableSize, badger.MinBlockCacheSize)
	}
}

// TestStoreSizes: Sizes returns the sizes in bytes, 0 for a size left to
// the default, and both 0 for no store section.
func TestStoreSizes(t *testing.T) {
	tests := []struct {
		name                 string
		s                    *config.Store
		memtable, blockCache int64
	}{
		{"no section", nil, 0, 0},
		{"defaults", &config.Store{}, 0, 0},
		{"memtable", &config.Store{MemtableSize: "16MiB"}, 16 << 20, 0},
		{"both in bytes and units", &config.Store{MemtableSize: "8388608", BlockCacheSize: "2MiB"}, 8 << 20, 2 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, c := tt.s.Sizes(); m != tt.memtable || c != tt.blockCache {
				t.Errorf("Sizes() = %d, %d; want %d, %d", m, c, tt.memtable, tt.blockCache)
			}
		})
	}
}
