package extensions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

func TestAPIFields(t *testing.T) {
	var buf bytes.Buffer
	var b pipeline.Builder
	api := extensions.NewAPI("audit", extensions.Host{
		Agent: "assistant", Builder: &b, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
	})
	if api.Name != "audit" || api.Agent != "assistant" {
		t.Errorf("Name, Agent = %q, %q; want audit, assistant", api.Name, api.Agent)
	}
	if api.Pipeline == nil || api.Tools == nil || api.State == nil || api.Events == nil || api.Logger == nil {
		t.Fatalf("API has a nil field: %+v", api)
	}
	api.Logger.Info("hello", "k", "v")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log record %q: %v", buf.String(), err)
	}
	delete(rec, "time")
	if got, want := fmt.Sprint(rec), fmt.Sprint(map[string]any{"level": "INFO", "msg": "hello", "agent": "assistant", "extension": "audit", "k": "v"}); got != want {
		t.Errorf("log record = %s, want %s", got, want)
	}

	// Without a logger, the API's logs go nowhere.
	quiet := extensions.NewAPI("audit", extensions.Host{Agent: "assistant", Builder: &b})
	if quiet.Logger == nil {
		t.Fatal("Logger is nil without Host.Logger")
	}
	if quiet.Logger.Enabled(context.Background(), slog.LevelError) {
		t.Error("the default logger is enabled; want a discarding one")
	}
	quiet.Logger.Error("dropped")
}

func TestTools(t *testing.T) {
	tool := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "lookup", Category: pipeline.CategoryRead}}
	errTaken := errors.New(`agent "a" already has a tool "lookup"`)
	tests := []struct {
		name    string
		addTool func(*[]string) func(pipeline.Tool) error
		want    string
		wantIs  error
		added   []string
	}{
		{name: "added", addTool: func(added *[]string) func(pipeline.Tool) error {
			return func(t pipeline.Tool) error { *added = append(*added, t.Name); return nil }
		}, added: []string{"lookup"}},
		{name: "refused", addTool: func(*[]string) func(pipeline.Tool) error {
			return func(pipeline.Tool) error { return errTaken }
		}, want: `extension "x": register tool: agent "a" already has a tool "lookup"`, wantIs: errTaken},
		{name: "validated by the host", addTool: func(*[]string) func(pipeline.Tool) error {
			return func(t pipeline.Tool) error { return t.Validate() }
		}, want: `extension "x": register tool: tool "lookup": no function`},
		{name: "no AddTool", addTool: func(*[]string) func(pipeline.Tool) error { return nil },
			want: `extension "x": tools cannot be registered here`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var added []string
			api := extensions.NewAPI("x", extensions.Host{Agent: "a", AddTool: tt.addTool(&added)})
			err := api.Tools.Register(tool)
			checkErr(t, err, tt.want)
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			if !slices.Equal(added, tt.added) {
				t.Errorf("added = %q, want %q", added, tt.added)
			}
		})
	}
}
