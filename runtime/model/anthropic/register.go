package anthropic

import "github.com/ganglion-dev/ganglion/runtime/model"

// Importing the package registers the provider "anthropic"
// ([model.Register]).
func init() { model.Register(providerName, factory) }

// factory opens the provider a config's model block describes; an empty
// api_key_env means ANTHROPIC_API_KEY.
func factory(s model.Settings) (model.Provider, error) {
	return New(Config{Model: s.Name, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv, MaxOutputTokens: s.MaxOutputTokens, Thinking: s.Thinking})
}
