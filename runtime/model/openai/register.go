package openai

import "github.com/ganglion-dev/ganglion/runtime/model"

// Importing the package registers the provider "openai" ([model.Register]).
func init() { model.Register(providerName, factory) }

// factory opens the provider a config's model block describes. OpenAI's
// own API needs a key: without base_url and api_key_env the key is read
// from [DefaultAPIKeyEnv]. A local server given by base_url (Ollama, LM
// Studio) may need none, so there an empty api_key_env sends no key.
func factory(s model.Settings) (model.Provider, error) {
	keyEnv := s.APIKeyEnv
	if keyEnv == "" && s.BaseURL == "" {
		keyEnv = DefaultAPIKeyEnv
	}
	return New(Config{Model: s.Name, BaseURL: s.BaseURL, APIKeyEnv: keyEnv, MaxOutputTokens: s.MaxOutputTokens})
}
