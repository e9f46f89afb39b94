package anthropic

import (
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// TestRegistered: importing the package registers "anthropic", whose
// factory passes the config's settings on.
func TestRegistered(t *testing.T) {
	f, ok := model.Lookup("anthropic")
	if !ok {
		t.Fatal(`model.Lookup("anthropic") found nothing: the package did not register`)
	}
	p, err := f(model.Settings{Name: "claude", APIKeyEnv: "MY_KEY", MaxOutputTokens: 100, Thinking: 1024})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.(*provider).cfg
	if cfg.Model != "claude" || cfg.APIKeyEnv != "MY_KEY" || cfg.MaxOutputTokens != 100 || cfg.Thinking != 1024 {
		t.Errorf("config = %+v, want the settings passed on", cfg)
	}
}
