package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

func echoTool(name string, cat pipeline.ToolCategory) pipeline.Tool {
	return pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: name, Description: "echo", Category: cat},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: string(c.Arguments())}, nil
		},
	}
}

func TestStepCatalogIsPerStep(t *testing.T) {
	base := []pipeline.Tool{echoTool("read_file", pipeline.CategoryRead), echoTool("execute_command", pipeline.CategoryExecute)}
	var b pipeline.Builder
	b.Step(pipeline.Owner{Extension: "hide-exec"}, func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
		if s.Index() == 1 {
			s.Tools().Filter(func(t pipeline.ToolSpec) bool { return t.Category != pipeline.CategoryExecute })
			if err := s.Tools().Add(echoTool("extra", pipeline.CategoryOther)); err != nil {
				return nil, err
			}
			if err := s.Tools().Add(echoTool("extra", pipeline.CategoryOther)); err == nil || err.Error() != `tool "extra" is already in the catalog` {
				t.Errorf("duplicate add err = %v", err)
			}
		}
		return s.Next(ctx)
	})
	var seen []string
	p, err := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{}, nil
		},
		Step: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			var names []string
			for _, tl := range s.Tools().Tools() {
				names = append(names, tl.Name)
			}
			seen = append(seen, strings.Join(names, ","))
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := pipeline.NewTurnContext(pipeline.TurnInfo{})
	sc := pipeline.NewStepContext(tc, 1, base)
	for i := 1; i <= 2; i++ {
		sc.Reset(i, base)
		if _, err := p.RunStep(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"read_file,extra", "read_file,execute_command"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("catalogs = %q, want %q", seen, want)
	}
	if len(base) != 2 || base[1].Name != "execute_command" {
		t.Fatalf("base slice was changed: %v", base)
	}
}

func TestToolCallChain(t *testing.T) {
	redact := func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		r, err := c.Next(ctx)
		r.Content = strings.ReplaceAll(r.Content, "sk-secret", "[redacted]")
		return r, err
	}
	rewriteArgs := func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		c.SetArguments(json.RawMessage(`{"v":"sk-secret"}`))
		return c.Next(ctx)
	}
	tests := []struct {
		name    string
		found   bool
		layers  []pipeline.ToolCallFunc
		want    pipeline.ToolResult
		wantErr string
	}{
		{name: "tool runs", found: true, want: pipeline.ToolResult{CallID: "c1", Name: "echo", Content: `{"v":1}`}},
		{name: "unknown tool is an error result", found: false, want: pipeline.ToolResult{CallID: "c1", Name: "echo", Content: `unknown tool "echo"`, IsError: true}},
		{name: "result replaced and args rewritten", found: true, layers: []pipeline.ToolCallFunc{redact, rewriteArgs},
			want: pipeline.ToolResult{CallID: "c1", Name: "echo", Content: `{"v":"[redacted]"}`}},
		{name: "error names extension", found: true, layers: []pipeline.ToolCallFunc{func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return nil, errors.New("denied")
		}}, wantErr: `extension "ext1": toolCall middleware: denied`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b pipeline.Builder
			for i, l := range tt.layers {
				b.ToolCall(pipeline.Owner{Extension: "ext" + string(rune('1'+i))}, l)
			}
			p, _ := b.Build(pipeline.Handlers{
				Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					return &pipeline.TurnResult{}, nil
				},
				Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
					return &pipeline.StepResult{}, nil
				},
			})
			cc := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Call: pipeline.ToolCall{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"v":1}`)}, Tool: echoTool("echo", pipeline.CategoryOther), Found: tt.found})
			got, err := p.RunToolCall(context.Background(), cc)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || *got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestConcurrentRuns hammers one pipeline from many goroutines, each with its
// own contexts, as the runtime does for parallel tool calls and instances.
func TestConcurrentRuns(t *testing.T) {
	var b pipeline.Builder
	for i := range 3 {
		b.ToolCall(pipeline.Owner{Extension: string(rune('a' + i))}, func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return c.Next(ctx)
		})
	}
	p, _ := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{}, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				args := json.RawMessage(`{"g":` + string(rune('0'+g%10)) + `}`)
				cc := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Call: pipeline.ToolCall{ID: "c", Name: "echo", Arguments: args}, Tool: echoTool("echo", ""), Found: true})
				r, err := p.RunToolCall(context.Background(), cc)
				if err != nil || r.Content != string(args) {
					t.Errorf("run %d: %+v %v", i, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestToolValidate(t *testing.T) {
	fn := func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{}, nil
	}
	tests := []struct {
		name    string
		tool    pipeline.Tool
		wantErr string
	}{
		{"ok", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "read_file", Category: pipeline.CategoryRead}, Func: fn}, ""},
		{"empty name", pipeline.Tool{Func: fn}, "tool name is empty"},
		{"bad char", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "read file"}, Func: fn}, `tool name "read file": character ' ' at offset 4 is not a letter, digit, '_' or '-'`},
		{"too long", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: strings.Repeat("x", 65)}, Func: fn}, `tool name "` + strings.Repeat("x", 65) + `" is longer than 64 characters`},
		{"category", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "t", Category: "network"}, Func: fn}, `tool "t": unknown category "network" (want read, write, execute, browser, mcp or other)`},
		{"no func", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "t"}}, `tool "t": no function`},
		{"bad schema", pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "t", Parameters: json.RawMessage(`{`)}, Func: fn}, `tool "t": parameters schema is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tool.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseOnError(t *testing.T) {
	for in, want := range map[string]pipeline.OnError{"": pipeline.FailClosed, "fail_closed": pipeline.FailClosed, "fail_open": pipeline.FailOpen} {
		got, err := pipeline.ParseOnError(in)
		if err != nil || got != want || (in != "" && got.String() != in) {
			t.Errorf("ParseOnError(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := pipeline.ParseOnError("ignore"); err == nil || err.Error() != `on_error "ignore": want fail_closed or fail_open` {
		t.Errorf("err = %v", err)
	}
}
