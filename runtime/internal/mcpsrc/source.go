package mcpsrc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/internal/plainjson"
)

// Limits of a source; see [Source].
const (
	// DefaultTimeout bounds a tool call whose server names no timeout.
	DefaultTimeout = 60 * time.Second
	// StartTimeout is the least time starting a server (its command, the
	// protocol's handshake) and listing its tools get, whatever the
	// server's timeout: a command's start often takes longer than a tool
	// call may.
	StartTimeout = 10 * time.Second
	// MaxResult is the longest tool result text; the rest is cut, with a
	// note saying how much.
	MaxResult = 64 << 10
	// firstBackoff and maxBackoff bound the wait before connecting again
	// to a server that failed: it doubles with each failure in a row.
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// Connect opens a new connection to the server: a transport to connect
// the client on (a command, an HTTP endpoint).
type Connect func(ctx context.Context) (mcp.Transport, error)

// Source is one MCP server. It is safe for concurrent use.
type Source struct {
	name    string
	connect Connect
	timeout time.Duration
	now     func() time.Time
	client  *mcp.Client

	changed atomic.Bool // the server said its tools changed: list them again

	mu       sync.Mutex
	session  *mcp.ClientSession
	tools    []*mcp.Tool // nil until listed, or after the server said they changed
	failures int         // connection failures in a row
	retryAt  time.Time   // no connection before then
	lastErr  error
	closed   bool
}

// New returns the source of server name, which connect reaches; timeout
// bounds each call (0: [DefaultTimeout]), and starting the server and
// listing its tools when it is longer than [StartTimeout].
func New(name string, connect Connect, timeout time.Duration) *Source {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	s := &Source{name: name, connect: connect, timeout: timeout, now: time.Now}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "ganglion", Version: "1"}, &mcp.ClientOptions{
		// Not under s.mu: the handler may run while Tools, holding it,
		// waits for the list it would be delivered before.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.changed.Store(true) },
	})
	return s
}

// Name returns the server's name.
func (s *Source) Name() string { return s.name }

// session returns the open session, connecting if there is none and the
// backoff allows.
func (s *Source) sessionLocked(ctx context.Context) (*mcp.ClientSession, error) {
	if s.closed {
		return nil, fmt.Errorf("MCP server %q: closed", s.name)
	}
	if s.session != nil {
		return s.session, nil
	}
	if now := s.now(); now.Before(s.retryAt) {
		return nil, fmt.Errorf("MCP server %q is down (trying again in %s): %w", s.name, s.retryAt.Sub(now).Round(time.Millisecond), s.lastErr)
	}
	cs, err := s.open(ctx)
	if err != nil {
		s.failures++
		s.lastErr = err
		s.retryAt = s.now().Add(backoff(s.failures))
		return nil, fmt.Errorf("MCP server %q: %w", s.name, err)
	}
	s.failures, s.lastErr, s.session, s.tools = 0, nil, cs, nil
	go s.watch(cs)
	return cs, nil
}

func (s *Source) open(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, StartTimeout))
	defer cancel()
	t, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	return s.client.Connect(ctx, t, nil)
}

// watch forgets cs when its connection ends (the server exited or
// crashed), so that the next use connects again.
func (s *Source) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == cs {
		s.session, s.tools = nil, nil
		if err == nil {
			err = errors.New("the server closed the connection")
		}
		s.failures++
		s.lastErr = err
		s.retryAt = s.now().Add(backoff(s.failures))
	}
}

func backoff(failures int) time.Duration {
	d := firstBackoff
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// Tools returns the server's tools, listing them when they are not
// known yet or changed.
func (s *Source) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, err := s.sessionLocked(ctx)
	if err != nil {
		return nil, err
	}
	if s.changed.Swap(false) {
		s.tools = nil
	}
	if s.tools != nil {
		return s.tools, nil
	}
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, StartTimeout))
	defer cancel()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: listing its tools: %w", s.name, err)
		}
		tools = append(tools, t)
	}
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	s.tools = tools
	return tools, nil
}

// Result is what a tool call came to: its text for the model, and
// whether the tool said it failed.
type Result struct {
	Text    string
	IsError bool
}

// Call calls tool with the JSON object args, within the source's timeout
// and ctx. A server that is down, a timeout or a protocol error is an
// error; a tool's own failure is a Result with IsError.
func (s *Source) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	s.mu.Lock()
	cs, err := s.sessionLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return Result{}, fmt.Errorf("arguments are not a JSON object: %w", err)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		return Result{}, fmt.Errorf("MCP server %q: tool %q did not answer within %s", s.name, tool, s.timeout)
	case err != nil:
		return Result{}, fmt.Errorf("MCP server %q: %w", s.name, err)
	}
	return Result{Text: cut(text(res)), IsError: res.IsError}, nil
}

// Close ends the session and, for a command, its process.
func (s *Source) Close() error {
	s.mu.Lock()
	cs := s.session
	s.session, s.closed = nil, true
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Close()
}

// text renders a result for the model: text as it is, structured content
// as JSON when there is no text, and what a text model cannot read
// (images, audio, resources) as a line that says what it is.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "[image: "+c.MIMEType+", "+strconv.Itoa(len(c.Data))+" bytes]")
		case *mcp.AudioContent:
			parts = append(parts, "[audio: "+c.MIMEType+", "+strconv.Itoa(len(c.Data))+" bytes]")
		case *mcp.ResourceLink:
			parts = append(parts, "[resource link: "+c.Name+" "+c.URI+"]")
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else if r != nil {
				parts = append(parts, "[resource: "+r.URI+", "+r.MIMEType+", "+strconv.Itoa(len(r.Blob))+" bytes]")
			}
		default:
			b, _ := plainjson.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := plainjson.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// cut keeps the first MaxResult bytes of s, at a character boundary, and
// says how much it left out.
func cut(s string) string {
	if len(s) <= MaxResult {
		return s
	}
	i := MaxResult
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "\n[cut: " + strconv.Itoa(len(s)-i) + " more bytes of the result]"
}
