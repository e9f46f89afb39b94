package store_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ganglion-dev/ganglion/store"
)

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
