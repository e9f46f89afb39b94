package badger_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// ExampleOpen commits a turn, closes the store, and finds the turn
// again after reopening the directory.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ganglion-store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	s, err := badger.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	err = s.Commit(ctx, "support", "ticket-42", store.Batch{
		Put: []store.Record{
			{Seq: 0, Message: &pipeline.Message{ID: "m0", Role: pipeline.RoleUser, Content: "My order is late.", CreatedAt: now}},
			{Seq: 1, Message: &pipeline.Message{ID: "m1", Role: pipeline.RoleAssistant, Content: "Let me look.", CreatedAt: now}},
		},
		Meta: &store.Meta{Turns: 1, NextSeq: 2, CreatedAt: now, UpdatedAt: now},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	// A later run opens the same directory.
	s, err = badger.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	keys, err := s.Instances(ctx, "support")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("instances:", keys)
	meta, records, found, err := s.LoadInstance(ctx, "support", "ticket-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("found:", found, "turns:", meta.Turns, "next seq:", meta.NextSeq)
	for _, r := range records {
		fmt.Printf("%d %s: %s\n", r.Seq, r.Message.Role, r.Message.Content)
	}
	// Output:
	// instances: [ticket-42]
	// found: true turns: 1 next seq: 2
	// 0 user: My order is late.
	// 1 assistant: Let me look.
}

// A store sized for a process that keeps many small instances: the
// smallest memtables and block cache Badger is given. Smaller sizes are
// refused.
func ExampleWithMemTableSize() {
	dir, err := os.MkdirTemp("", "ganglion-store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := badger.Open(dir, badger.WithMemTableSize(badger.MinMemTableSize), badger.WithBlockCacheSize(badger.MinBlockCacheSize))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("opened with", badger.MinMemTableSize>>20, "MiB memtables and a", badger.MinBlockCacheSize>>20, "MiB block cache")
	s.Close()

	_, err = badger.Open(dir, badger.WithMemTableSize(1<<20))
	fmt.Println(strings.TrimPrefix(err.Error(), "store: open data directory "+strconv.Quote(dir)+": "))
	// Output:
	// opened with 8 MiB memtables and a 1 MiB block cache
	// memtable size 1048576 bytes is below the minimum of 8388608 (8 MiB)
}
