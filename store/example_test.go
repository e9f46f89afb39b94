package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// ExampleOpenBadger commits a turn, closes the store, and finds the turn
// again after reopening the directory.
func ExampleOpenBadger() {
	dir, err := os.MkdirTemp("", "ganglion-store-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	s, err := store.OpenBadger(dir)
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
	s, err = store.OpenBadger(dir)
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

// ExampleNewMemory keeps an extension's state next to an instance.
func ExampleNewMemory() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()

	if err := s.SetState(ctx, "support", "ticket-42", "memo", []byte(`{"notes":1}`)); err != nil {
		log.Fatal(err)
	}
	state, err := s.GetState(ctx, "support", "ticket-42", "memo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(state))

	err = s.SetState(ctx, "support", "ticket 42\x00", "memo", nil)
	fmt.Println(err)
	// Output:
	// {"notes":1}
	// store: invalid instance key "ticket 42\x00": NUL at offset 9 (want 1 to 256 bytes of UTF-8 without NUL)
}
