package tool_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

func fakeTool(name, schema string) pipeline.Tool {
	return pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: name, Description: "test tool", Parameters: []byte(schema), Category: pipeline.CategoryOther},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: name}, nil
		},
	}
}

func TestRegistryAdd(t *testing.T) {
	tests := []struct {
		name    string
		tool    pipeline.Tool
		wantErr string
	}{
		{name: "valid", tool: fakeTool("c", `{"type":"object"}`)},
		{name: "no schema", tool: fakeTool("d", ``)},
		{name: "duplicate", tool: fakeTool("a", ``), wantErr: `tool "a" is already registered`},
		{name: "invalid name", tool: fakeTool("a b", ``), wantErr: `tool name "a b": character ' ' at offset 1 is not a letter, digit, '_' or '-'`},
		{name: "no function", tool: pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "f"}}, wantErr: `tool "f": no function`},
		{name: "schema does not compile", tool: fakeTool("bad", `{"type":"objekt"}`),
			wantErr: `tool "bad": parameters schema does not compile: /type: 'anyOf' failed: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; or got string, want array`},
		{name: "schema refers outside", tool: fakeTool("ref", `{"$ref":"file:///etc/passwd"}`),
			wantErr: `tool "ref": parameters schema does not compile: failing loading "file:///etc/passwd": schema refers to file:///etc/passwd; tool schemas must be self-contained`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tool.NewRegistry()
			for _, n := range []string{"a", "b"} {
				if err := r.Add(fakeTool(n, ``)); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Add(tt.tool)
			if got := errText(err); got != tt.wantErr {
				t.Fatalf("Add error:\n got %s\nwant %s", got, tt.wantErr)
			}
			want := []string{"a", "b"}
			if tt.wantErr == "" {
				want = append(want, tt.tool.Name)
			}
			if got := r.Names(); !slices.Equal(got, want) {
				t.Errorf("Names() = %q, want %q", got, want)
			}
		})
	}
}

func TestRegistryLookup(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Add(fakeTool("a", ``)); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Lookup("a"); !ok || got.Name != "a" {
		t.Errorf("Lookup(a) = %q, %v; want a, true", got.Name, ok)
	}
	if _, ok := r.Lookup("z"); ok {
		t.Error("Lookup(z) found a tool")
	}
	names := r.Names()
	names[0] = "changed"
	if r.Names()[0] != "a" {
		t.Error("Names() returned the registry's own slice")
	}
}

func TestRegistrySelect(t *testing.T) {
	tests := []struct {
		name     string
		registry []string
		select_  []string
		want     []string
		wantErr  string
	}{
		{name: "in the asked order", registry: []string{"a", "b", "c"}, select_: []string{"c", "a"}, want: []string{"c", "a"}},
		{name: "none", registry: []string{"a"}, select_: nil, want: []string{}},
		{name: "unknown", registry: []string{"a", "b"}, select_: []string{"a", "x"}, wantErr: `unknown tool "x" (known: a, b)`},
		{name: "unknown in empty registry", select_: []string{"x"}, wantErr: `unknown tool "x" (known: none)`},
		{name: "twice", registry: []string{"a", "b"}, select_: []string{"a", "b", "a"}, wantErr: `tool "a" is selected twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tool.NewRegistry()
			for _, n := range tt.registry {
				if err := r.Add(fakeTool(n, ``)); err != nil {
					t.Fatal(err)
				}
			}
			tools, err := r.Select(tt.select_)
			if got := errText(err); got != tt.wantErr {
				t.Fatalf("Select error:\n got %s\nwant %s", got, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := []string{}
			for _, tl := range tools {
				got = append(got, tl.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Select() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRegistryConcurrent hammers a registry with readers while a writer adds
// tools; run with -race.
func TestRegistryConcurrent(t *testing.T) {
	r := tool.NewRegistry()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if g == 0 {
					if err := r.Add(fakeTool(fmt.Sprintf("t%d", i), ``)); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				r.Lookup("t1")
				r.Names()
				_, _ = r.Select([]string{"t0"})
			}
		})
	}
	wg.Wait()
	if n := len(r.Names()); n != 200 {
		t.Errorf("%d tools registered, want 200", n)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestWorkspaceToolNames: the exported list is exactly what a workspace
// offers, so a config checked against it before a workspace opens is
// checked against the real tools.
func TestWorkspaceToolNames(t *testing.T) {
	ws, err := tool.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var names []string
	for _, tl := range ws.Tools() {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, tool.WorkspaceToolNames) {
		t.Errorf("Tools() names = %q, WorkspaceToolNames = %q", names, tool.WorkspaceToolNames)
	}
}
