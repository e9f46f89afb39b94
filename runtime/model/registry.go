package model

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Settings are the model settings of an agent (or of an extension's
// model) that a [Factory] gets: the part of the config's model block that
// concerns the provider itself.
type Settings struct {
	// Name is the provider's model name.
	Name string
	// BaseURL is the API endpoint; empty: the provider's own.
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key;
	// empty: the provider's default, if it has one.
	APIKeyEnv string
	// MaxOutputTokens bounds an answer; 0: the provider's default.
	MaxOutputTokens int
	// Thinking is the token budget of extended thinking, for providers
	// that have it; 0: off.
	Thinking int
}

// Factory makes a provider from its settings.
type Factory func(Settings) (Provider, error)

// The providers registered with [Register], by name.
var registry struct {
	sync.RWMutex
	factories map[string]Factory
}

// Register makes the provider factory f available to configs as
// "provider: name". A provider's package calls it from its init function,
// so that a program offers the providers it imports and links no other:
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/model/openai"
//
// Register panics if f is nil or if name is empty or already registered:
// two packages claiming one name is a mistake in the program.
// It is safe for concurrent use.
func Register(name string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	switch {
	case name == "":
		panic("model: Register of a provider without a name")
	case f == nil:
		panic(fmt.Sprintf("model: Register of provider %q with a nil factory", name))
	}
	if _, dup := registry.factories[name]; dup {
		panic(fmt.Sprintf("model: Register called twice for provider %q", name))
	}
	if registry.factories == nil {
		registry.factories = map[string]Factory{}
	}
	registry.factories[name] = f
}

// Lookup returns the factory registered as name.
// It is safe for concurrent use.
func Lookup(name string) (Factory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.factories[name]
	return f, ok
}

// Providers returns the names of the registered providers, sorted.
// It is safe for concurrent use.
func Providers() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.factories))
}

// firstParty are the providers of this module, by name, with the package
// that registers each: what a program imports to use it.
var firstParty = map[string]string{
	"openai":    "github.com/ganglion-dev/ganglion/runtime/model/openai",
	"anthropic": "github.com/ganglion-dev/ganglion/runtime/model/anthropic",
}

// ImportPath returns the path of the package of this module that registers
// the provider name when imported, or "" if no package of this module
// provides it. Whether that package is linked into the program is for
// [Lookup] to say.
func ImportPath(name string) string { return firstParty[name] }
