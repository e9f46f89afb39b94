package openai_test

import (
	"fmt"

	"github.com/ganglion-dev/ganglion/runtime/model/openai"
)

// A provider built in Go, for settings a config cannot give (an HTTP
// client, headers, a bound on a whole call); hand it to an agent with
// runtime.WithModel. A config names the provider "openai" instead.
func ExampleNew() {
	p, err := openai.New(openai.Config{Model: "gpt-4o-mini", APIKeyEnv: openai.DefaultAPIKeyEnv})
	fmt.Println(p != nil, err)
	_, err = openai.New(openai.Config{Model: "llama3.2", BaseURL: "localhost:11434/v1"})
	fmt.Println(err)
	// Output:
	// true <nil>
	// openai: base URL "localhost:11434/v1" is not an absolute http or https URL
}
