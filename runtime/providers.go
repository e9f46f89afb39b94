package runtime

import (
	"errors"
	"path/filepath"
	"sync"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/anthropic"
	"github.com/ganglion-dev/ganglion/runtime/model/openai"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// The model providers every runtime knows; WithProvider adds others.
const (
	providerScripted  = config.ScriptedProvider
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
)

// builtinProviders returns the factories of the built-in providers.
func builtinProviders() map[string]ProviderFactory {
	return map[string]ProviderFactory{
		providerScripted: scriptedProvider(),
		providerOpenAI: func(m config.Model) (model.Provider, error) {
			keyEnv := m.APIKeyEnv
			if keyEnv == "" && m.BaseURL == "" {
				// OpenAI's own API needs a key; a local server given by
				// base_url (Ollama, LM Studio) may not.
				keyEnv = openai.DefaultAPIKeyEnv
			}
			return openai.New(openai.Config{Model: m.Name, BaseURL: m.BaseURL, APIKeyEnv: keyEnv, MaxOutputTokens: m.MaxOutputTokens})
		},
		providerAnthropic: func(m config.Model) (model.Provider, error) {
			return anthropic.New(anthropic.Config{Model: m.Name, BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv, MaxOutputTokens: m.MaxOutputTokens, Thinking: m.Thinking})
		},
	}
}

// retrying wraps the provider p of agent a, as its model settings say, in
// retries ([model.WithRetry]), each published as a model.retry event.
func (a *agent) retrying(p model.Provider, m *config.Model) model.Provider {
	policy := model.RetryPolicy{OnRetry: func(i model.RetryInfo) {
		a.logger.Warn("model call failed; retrying", "instance", i.Request.InstanceKey, "turn", i.Request.TurnID,
			"attempt", i.Attempt, "of", i.MaxRetries, "wait", i.Delay, "err", i.Err)
		bus := a.rt.bus
		if !bus.Active() {
			return
		}
		bus.Publish(events.Event{Topic: events.ModelRetry, Agent: a.name, Instance: i.Request.InstanceKey, TurnID: i.Request.TurnID, Source: "runtime",
			Data: events.ModelRetryData{Step: i.Request.Step, Attempt: i.Attempt, MaxRetries: i.MaxRetries, DelayMS: i.Delay.Milliseconds(),
				RetryAfter: i.FromServer, Kind: model.KindOf(i.Err).String(), Error: i.Err.Error()}})
	}}
	if m != nil && m.MaxRetries != nil {
		policy.MaxRetries = *m.MaxRetries
		if policy.MaxRetries == 0 {
			policy.MaxRetries = -1 // none
		}
	}
	return model.WithRetry(p, policy)
}

// scriptedProvider opens the scripted model, one per script file.
func scriptedProvider() ProviderFactory {
	var mu sync.Mutex
	cache := map[string]*scripted.Model{}
	return func(m config.Model) (model.Provider, error) {
		if m.Script == "" {
			return nil, errors.New("the scripted model needs script: a YAML file of responses")
		}
		abs, err := filepath.Abs(m.Script)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if s, ok := cache[abs]; ok {
			return s, nil
		}
		s, err := scripted.Load(m.Script)
		if err != nil {
			return nil, err
		}
		cache[abs] = s
		return s, nil
	}
}
