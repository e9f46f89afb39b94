package extensions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// secretsHost serves one instance's secrets.
type secretsHost map[string]string

func (h secretsHost) Secret(_ context.Context, agent, instance, name string) (string, bool, error) {
	v, ok := h[agent+"/"+instance+"/"+name]
	return v, ok, nil
}

func TestSecretsGrants(t *testing.T) {
	ctx := context.Background()
	api := extensions.NewAPI("billing", extensions.Host{Agent: "a", Secrets: secretsHost{"a/k/STRIPE_KEY": "sk-test-1234"}, Grants: []string{"STRIPE_KEY", "OTHER"}})
	tests := []struct {
		name, secret string
		want         string
		found        bool
		wantErr      string
	}{
		{"granted and provided", "STRIPE_KEY", "sk-test-1234", true, ""},
		{"granted, not provided", "OTHER", "", false, ""},
		{"not granted", "OPENAI_API_KEY", "", false, `extension "billing": secret "OPENAI_API_KEY" is not granted (list it under the extension's secrets: in the config)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, found, err := api.Secrets.Get(ctx, "k", tt.secret)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, extensions.ErrNotGranted) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || v != tt.want || found != tt.found {
				t.Fatalf("Get = %q, %v, %v; want %q, %v", v, found, err, tt.want, tt.found)
			}
		})
	}
}

// TestPendingWithoutHost: an API built without a runtime refuses pauses
// and secrets with a clear error instead of panicking.
func TestPendingWithoutHost(t *testing.T) {
	api := extensions.NewAPI("x", extensions.Host{Agent: "a", Grants: []string{"K"}})
	err := api.Pending.Handle(extensions.PendingKind{Name: "q", Resolve: func(context.Context, ledger.Item, extensions.Action) (extensions.Outcome, error) {
		return extensions.Outcome{}, nil
	}})
	if err == nil || err.Error() != `extension "x": pending items are not supported here` {
		t.Errorf("Handle: %v", err)
	}
	s := pipeline.NewStepContext(pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a"}), 1, nil)
	if _, err := api.Pending.Pause(context.Background(), s, ledger.Item{Kind: "q"}, time.Minute); err == nil || err.Error() != `extension "x": pending items are not supported here` {
		t.Errorf("Pause: %v", err)
	}
	if _, _, err := api.Secrets.Get(context.Background(), "k", "K"); err == nil || err.Error() != `extension "x": secrets are not supported here` {
		t.Errorf("Secrets.Get: %v", err)
	}
}

// TestPendingHandleChecks: a kind needs a name and a Resolve.
func TestPendingHandleChecks(t *testing.T) {
	api := extensions.NewAPI("x", extensions.Host{Agent: "a", Pending: nopPendingHost{}})
	for _, k := range []extensions.PendingKind{{Name: "q"}, {Resolve: func(context.Context, ledger.Item, extensions.Action) (extensions.Outcome, error) {
		return extensions.Outcome{}, nil
	}}} {
		if err := api.Pending.Handle(k); err == nil || err.Error() != `extension "x": a pending kind needs a name and a Resolve function` {
			t.Errorf("Handle(%+v) = %v", k, err)
		}
	}
}

type nopPendingHost struct{}

func (nopPendingHost) HandlePending(string, extensions.PendingKind) error { return nil }
func (nopPendingHost) CreatePending(context.Context, string, *pipeline.StepContext, ledger.Item, time.Duration) (ledger.Item, error) {
	return ledger.Item{}, nil
}

func (nopPendingHost) CreatePendingCall(context.Context, string, *pipeline.ToolCallContext, ledger.Item, time.Duration) (ledger.Item, error) {
	return ledger.Item{}, nil
}
