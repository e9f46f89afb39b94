package openai

import (
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// TestRegistered: importing the package registers "openai", whose factory
// reads OpenAI's own key from OPENAI_API_KEY unless the config names a
// variable, and sends none to a server given by base_url without one.
func TestRegistered(t *testing.T) {
	f, ok := model.Lookup("openai")
	if !ok {
		t.Fatal(`model.Lookup("openai") found nothing: the package did not register`)
	}
	for _, tt := range []struct {
		name    string
		s       model.Settings
		wantEnv string
	}{
		{"openai's API", model.Settings{Name: "gpt"}, DefaultAPIKeyEnv},
		{"named key", model.Settings{Name: "gpt", APIKeyEnv: "MY_KEY"}, "MY_KEY"},
		{"local server", model.Settings{Name: "llama", BaseURL: "http://localhost:11434/v1"}, ""},
		{"local server with key", model.Settings{Name: "llama", BaseURL: "http://localhost:11434/v1", APIKeyEnv: "MY_KEY"}, "MY_KEY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.(*provider).cfg
			if cfg.APIKeyEnv != tt.wantEnv || cfg.Model != tt.s.Name || cfg.BaseURL != tt.s.BaseURL {
				t.Errorf("config = %+v, want model %q, base URL %q, key env %q", cfg, tt.s.Name, tt.s.BaseURL, tt.wantEnv)
			}
		})
	}
}
