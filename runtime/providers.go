package runtime

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// providerScripted is the model provider every runtime knows, the offline
// default; the others are those the program links ([model.Register]) and
// those WithProvider adds.
const providerScripted = config.ScriptedProvider

// builtinProviders returns the factories of the providers registered with
// [model.Register], and of the scripted model, which no registration
// replaces.
func builtinProviders() map[string]ProviderFactory {
	ps := map[string]ProviderFactory{}
	for _, name := range model.Providers() {
		f, _ := model.Lookup(name)
		ps[name] = func(m config.Model) (model.Provider, error) {
			return f(model.Settings{Name: m.Name, BaseURL: m.BaseURL, APIKeyEnv: m.APIKeyEnv, MaxOutputTokens: m.MaxOutputTokens, Thinking: m.Thinking})
		}
	}
	ps[providerScripted] = scriptedProvider()
	return ps
}

// unknownProvider is the error for a provider name that no factory
// serves: for a provider of this module, it names the import that links it.
func unknownProvider(name string) error {
	if path := model.ImportPath(name); path != "" {
		return fmt.Errorf("provider %q is not linked into this program; add: import _ %q", name, path)
	}
	return fmt.Errorf("unknown provider %q", name)
}

// retrying wraps the provider p of agent a, as its model settings say, in
// retries ([model.WithRetry]), each published as a model.retry event.
func (a *agent) retrying(p model.Provider, m *config.Model) model.Provider {
	policy := model.RetryPolicy{OnRetry: func(i model.RetryInfo) {
		a.Logger.Warn("model call failed; retrying", "instance", i.Request.InstanceKey, "turn", i.Request.TurnID,
			"attempt", i.Attempt, "of", i.MaxRetries, "wait", i.Delay, "err", i.Err)
		bus := a.rt.env.Bus
		if !bus.Active() {
			return
		}
		bus.Publish(events.Event{Topic: events.ModelRetry, Agent: a.Name, Instance: i.Request.InstanceKey, TurnID: i.Request.TurnID, Source: "runtime",
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
