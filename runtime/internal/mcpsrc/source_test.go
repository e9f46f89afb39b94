package mcpsrc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

// testServer is an MCP server of the SDK, reached over in-memory
// transports: one connection per Connect, each to a new session of the
// same server, as a restarted process would be.
type testServer struct {
	t        *testing.T
	srv      *mcp.Server
	mu       sync.Mutex
	sessions []*mcp.ServerSession
	connects int
	refuse   error // Connect fails with it, when set
}

func newTestServer(t *testing.T) *testServer {
	ts := &testServer{t: t, srv: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)}
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such thing"}}}, nil, nil
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "mixed"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("12345")},
			&mcp.ResourceLink{Name: "report", URI: "file:///r.txt"},
		}}, nil, nil
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "structured"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"cmp": "a < b && c > d"}}, nil, nil
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("é", MaxResult)}}}, nil, nil
	})
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "hang"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	return ts
}

func (ts *testServer) connect(ctx context.Context) (mcp.Transport, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.connects++
	if ts.refuse != nil {
		return nil, ts.refuse
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ts.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	ts.sessions = append(ts.sessions, ss)
	return ct, nil
}

// crash ends every session the server has, as a process that dies.
func (ts *testServer) crash() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ss := range ts.sessions {
		ss.Close()
	}
	ts.sessions = nil
}

func names(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

func TestSourceCallsTools(t *testing.T) {
	ts := newTestServer(t)
	s := New("srv", ts.connect, 200*time.Millisecond)
	defer s.Close()
	ctx := t.Context()
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(tools); !slices.Equal(got, []string{"big", "echo", "fail", "hang", "mixed", "structured"}) {
		t.Fatalf("tools %v", got)
	}
	tests := []struct {
		tool, args string
		want       Result
		wantErr    string
	}{
		{"echo", `{"text":"hi"}`, Result{Text: "echo: hi"}, ""},
		{"fail", `{}`, Result{Text: "no such thing", IsError: true}, ""},
		{"mixed", `{}`, Result{Text: "a chart:\n[image: image/png, 5 bytes]\n[resource link: report file:///r.txt]"}, ""},
		{"structured", `{}`, Result{Text: `{"cmp":"a < b && c > d"}`}, ""}, // as the model reads it: not escaped for HTML
		{"hang", `{}`, Result{}, `MCP server "srv": tool "hang" did not answer within 200ms`},
		{"echo", `[1]`, Result{}, "arguments are not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got, err := s.Call(ctx, tt.tool, []byte(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	big, err := s.Call(ctx, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n[cut: 65536 more bytes of the result]"; !strings.HasSuffix(big.Text, want) || len(big.Text) != MaxResult+len(want) {
		t.Errorf("a big result is %d bytes ending %q", len(big.Text), big.Text[len(big.Text)-50:])
	}
}

// TestSourceRestartsADeadServer: a server that dies is a clear error
// while it stays down, and is connected again after the backoff.
func TestSourceRestartsADeadServer(t *testing.T) {
	ts := newTestServer(t)
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	s := New("srv", ts.connect, time.Second)
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Call(ctx, "echo", []byte(`{"text":"a"}`)); err != nil {
		t.Fatal(err)
	}
	ts.refuse = errors.New("exec: no such file")
	ts.crash()
	// The watcher notices the end of the connection.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Call(ctx, "echo", []byte(`{"text":"b"}`))
		if err != nil && strings.Contains(err.Error(), `MCP server "srv" is down (trying again in 500ms)`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a call to a dead server: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	advance(time.Second)
	if _, err := s.Call(ctx, "echo", []byte(`{}`)); err == nil || err.Error() != `MCP server "srv": exec: no such file` {
		t.Fatalf("reconnecting to a server that cannot start: %v", err)
	}
	if _, err := s.Call(ctx, "echo", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "trying again in 1s") {
		t.Fatalf("the backoff doubles: %v", err)
	}
	ts.refuse = nil
	advance(time.Second)
	got, err := s.Call(ctx, "echo", []byte(`{"text":"back"}`))
	if err != nil || got.Text != "echo: back" {
		t.Fatalf("after the restart: %+v, %v", got, err)
	}
}

// TestSourceRelistsChangedTools: a tool the server adds is listed at the
// next Tools, after the server says its list changed.
func TestSourceRelistsChangedTools(t *testing.T) {
	ts := newTestServer(t)
	s := New("srv", ts.connect, time.Second)
	defer s.Close()
	ctx := t.Context()
	if _, err := s.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	mcp.AddTool(ts.srv, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		tools, err := s.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names(tools), "late") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new tool never listed: %v", names(tools))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSourceCallHonoursCancellation: a call ends when its turn is
// cancelled, however long the tool's timeout.
func TestSourceCallHonoursCancellation(t *testing.T) {
	ts := newTestServer(t)
	s := New("srv", ts.connect, time.Hour)
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := s.Call(ctx, "hang", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
}

// TestSourceStartsSlowerThanACall: the timeout bounds each call; starting
// the server and listing its tools get at least StartTimeout, since a
// command's start (a package fetched by npx, a cold JVM, a loaded machine)
// often takes longer than a tool call may.
func TestSourceStartsSlowerThanACall(t *testing.T) {
	ts := newTestServer(t)
	slow := func(ctx context.Context) (mcp.Transport, error) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return ts.connect(ctx)
	}
	s := New("srv", slow, 100*time.Millisecond)
	defer s.Close()
	tools, err := s.Tools(t.Context())
	if err != nil {
		t.Fatalf("a server that starts in 300ms, with calls bounded by 100ms: %v", err)
	}
	if len(tools) == 0 {
		t.Fatal("no tools listed")
	}
	if _, err := s.Call(t.Context(), "hang", nil); err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Errorf("a call past its timeout: %v", err)
	}
}
