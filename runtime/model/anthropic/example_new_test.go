package anthropic_test

import (
	"fmt"

	"github.com/ganglion-dev/ganglion/runtime/model/anthropic"
)

// A provider built in Go, for settings a config cannot give (an HTTP
// client, prompt caching); hand it to an agent with runtime.WithModel. A
// config names the provider "anthropic" instead.
func ExampleNew() {
	p, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY", PromptCache: true})
	fmt.Println(p != nil, err)
	_, err = anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: "localhost:8080"})
	fmt.Println(err)
	// Output:
	// true <nil>
	// anthropic: base URL "localhost:8080" is not an http(s) URL
}
