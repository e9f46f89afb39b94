package model_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// stubProvider is a provider that is never called.
type stubProvider struct{ name string }

func (stubProvider) Stream(context.Context, *model.Request) (model.Stream, error) {
	return nil, errors.New("not called")
}

// TestRegister: a registered factory is found by its name, gets the
// settings, and is listed; names this test did not register are not.
func TestRegister(t *testing.T) {
	var got model.Settings
	model.Register("registry-test", func(s model.Settings) (model.Provider, error) {
		got = s
		return stubProvider{s.Name}, nil
	})
	f, ok := model.Lookup("registry-test")
	if !ok {
		t.Fatal(`Lookup("registry-test") found nothing after Register`)
	}
	want := model.Settings{Name: "m", BaseURL: "http://localhost:1", APIKeyEnv: "K", MaxOutputTokens: 10, Thinking: 5}
	p, err := f(want)
	if err != nil || p.(stubProvider).name != "m" || got != want {
		t.Errorf("factory gave %v, %v and got %+v; want the stub of m and %+v", p, err, got, want)
	}
	if !slices.Contains(model.Providers(), "registry-test") || !slices.IsSorted(model.Providers()) {
		t.Errorf("Providers() = %v, want it sorted with registry-test", model.Providers())
	}
	// The model package links no provider of its own.
	for _, name := range []string{"openai", "anthropic", "scripted"} {
		if _, ok := model.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a provider the test binary does not import", name)
		}
	}
}

// TestRegisterMistakes: registering twice, without a name or without a
// factory panics with a message that says which.
func TestRegisterMistakes(t *testing.T) {
	f := func(model.Settings) (model.Provider, error) { return stubProvider{}, nil }
	model.Register("registry-twice", f)
	for _, tt := range []struct {
		name, provider string
		f              model.Factory
		want           string
	}{
		{"twice", "registry-twice", f, `model: Register called twice for provider "registry-twice"`},
		{"no name", "", f, "model: Register of a provider without a name"},
		{"nil factory", "registry-nil", nil, `model: Register of provider "registry-nil" with a nil factory`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tt.want {
					t.Errorf("panic = %v, want %q", got, tt.want)
				}
			}()
			model.Register(tt.provider, tt.f)
		})
	}
	if _, ok := model.Lookup("registry-nil"); ok {
		t.Error("a refused registration was kept")
	}
}

// TestImportPath: the providers of this module name the package that
// registers them; other names, none.
func TestImportPath(t *testing.T) {
	for name, want := range map[string]string{
		"openai":    "github.com/ganglion-dev/ganglion/runtime/model/openai",
		"anthropic": "github.com/ganglion-dev/ganglion/runtime/model/anthropic",
		"scripted":  "",
		"nope":      "",
	} {
		if got := model.ImportPath(name); got != want {
			t.Errorf("ImportPath(%q) = %q, want %q", name, got, want)
		}
	}
}
