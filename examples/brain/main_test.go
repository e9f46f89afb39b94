package main

import (
	"bytes"
	"context"
	"testing"
)

func TestBrain(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	const want = `> ship the release
Working on it, keeping in mind what I sensed.
> answer the customer
Working on it, keeping in mind what I sensed.

the worker's conversation (no agent call in it):
  system: A feeling: careful: ship the release sounds urgent
  user: ship the release
  assistant: Working on it, keeping in mind what I sensed.
  system: A feeling: careful: answer the customer sounds urgent
  user: answer the customer
  assistant: Working on it, keeping in mind what I sensed.
observer state: {"Observations":2}
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
