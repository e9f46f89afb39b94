package main

import (
	"bytes"
	"context"
	"testing"
)

func TestEmbed(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	const want = `> What's the weather in Lisbon?
Dear traveller, It is sunny and 24 °C in Lisbon today.
(text_response, 2 steps)

> What should I wear?
Dear traveller, You asked about Lisbon; I would take a light jacket.
(text_response, 1 steps)

history: user assistant tool assistant user assistant
polite state: {"Turns":2}
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
