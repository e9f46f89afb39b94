package linktest_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// script is the scripted model's answer to agent a: "hi".
const script = "agents:\n  a:\n    turns:\n      - steps:\n          - text: hi\n"

// hello is a user's first message.
var hello = pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hello"}

// newRuntime writes src as ganglion.yaml (and script.yaml beside it) and
// opens a runtime on it, closed at the end of the test.
func newRuntime(t *testing.T, src string, opts ...runtime.Option) (*runtime.Runtime, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ganglion.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfigFile(path), runtime.WithMemoryStore()}, opts...)...)
	if err == nil {
		t.Cleanup(func() { rt.Close() })
	}
	return rt, err
}

// firstLine is the first line of err's text without the file's directory.
func firstLine(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("New succeeded; want an error")
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line[strings.Index(line, "ganglion.yaml"):]
}

// TestNothingLinked: the test binary links no optional provider, the
// premise of the tests below.
func TestNothingLinked(t *testing.T) {
	if names := model.Providers(); len(names) != 0 {
		t.Fatalf("model.Providers() = %v; the test binary must link none", names)
	}
}

// TestProviderNotLinked: a config that names a provider of this module
// that the program did not import fails at New, at the provider's
// position, naming the import to add; a name no package provides keeps
// the unknown provider error.
func TestProviderNotLinked(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"openai", "model: {provider: openai, name: gpt-4o}\nagents: [{name: a}]\n",
			`ganglion.yaml:1:19: model: provider "openai" is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/model/openai"`},
		{"anthropic for an agent", "model: {provider: scripted, script: script.yaml}\nagents:\n  - name: x\n    model: {provider: anthropic, name: claude}\n",
			`ganglion.yaml:4:23: agent "x": model: provider "anthropic" is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/model/anthropic"`},
		{"unknown", "model: {provider: mystery}\nagents: [{name: a}]\n",
			`ganglion.yaml:1:19: model: unknown provider "mystery" (known: scripted)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newRuntime(t, tt.src)
			if got := firstLine(t, err); got != tt.want {
				t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestExtensionModelNotLinked: an extension's model names the import too.
func TestExtensionModelNotLinked(t *testing.T) {
	_, err := newRuntime(t, `model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    extensions:
      - name: condense
        config: {summariser: model, model: {provider: openai, name: small}}
`)
	const want = `provider "openai" is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/model/openai"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New: %v\nwant an error with %s", err, want)
	}
}

// TestWithProviderWins: a provider given with WithProvider serves a name
// whose package is not linked.
func TestWithProviderWins(t *testing.T) {
	s, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	f := func(m config.Model) (model.Provider, error) { asked = m.Name; return s, nil }
	rt, err := newRuntime(t, "model: {provider: openai, name: gpt-4o}\nagents: [{name: a}]\n", runtime.WithProvider("openai", f))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Send(context.Background(), "a", "default", hello)
	if err != nil || asked != "gpt-4o" || res.Response.Content != "hi" {
		t.Errorf("Send = %+v, %v with the factory asked for %q; want the scripted answer from the factory of gpt-4o", res, err, asked)
	}
}

// TestTelemetryNotLinked: a telemetry block in a program without the OTLP
// export fails at New, at the block, naming the import to add; given its
// own tracer provider, the runtime needs no export.
func TestTelemetryNotLinked(t *testing.T) {
	const src = "model: {provider: scripted, script: script.yaml}\ntelemetry:\n  service_name: svc\nagents: [{name: a}]\n"
	_, err := newRuntime(t, src)
	const want = `ganglion.yaml:3:3: telemetry: OpenTelemetry export is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/otlp"`
	if got := firstLine(t, err); got != want {
		t.Errorf("error:\ngot  %s\nwant %s", got, want)
	}
	t.Run("off", func(t *testing.T) {
		if _, err := newRuntime(t, "model: {provider: scripted, script: script.yaml}\ntelemetry: {traces: false, metrics: false}\nagents: [{name: a}]\n"); err != nil {
			t.Errorf("a telemetry block that exports nothing: %v", err)
		}
	})
}

// TestTelemetryEnvNotLinked: an OTLP endpoint in the environment alone
// does not stop a program without the export: it gets one warning that
// names the import.
func TestTelemetryEnvNotLinked(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	rt, err := newRuntime(t, "model: {provider: scripted, script: script.yaml}\nagents: [{name: a}]\n", runtime.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Send(context.Background(), "a", "default", hello); err != nil {
		t.Fatal(err)
	}
	const want = `OpenTelemetry export is not linked into this program; add: import _ \"github.com/ganglion-dev/ganglion/runtime/otlp\"`
	if n := strings.Count(log.String(), want); n != 1 || strings.Count(log.String(), "level=WARN") != 1 {
		t.Errorf("log:\n%s\nwant one warning with %s", log.String(), want)
	}
}

// TestClusterNotLinked: a cluster block in a program without the cluster
// fails at New, at the block, naming the import to add, before anything
// connects.
func TestClusterNotLinked(t *testing.T) {
	const src = "model: {provider: scripted, script: script.yaml}\ncluster:\n  url: nats://127.0.0.1:1\nagents: [{name: a}]\n"
	_, err := newRuntime(t, src)
	const want = `ganglion.yaml:3:3: cluster: the cluster is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/cluster"`
	if got := firstLine(t, err); got != want {
		t.Errorf("error:\ngot  %s\nwant %s", got, want)
	}
}
