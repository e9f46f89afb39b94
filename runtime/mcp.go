package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/internal/envref"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/mcpsrc"
)

// inheritedEnv are the variables of the runtime's environment an MCP
// server's command gets besides its env: what programs need to run, and
// no secret of the runtime's (a provider's API key).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// mcpServer is an MCP server of the config. One that takes no provided
// secret is one source for the runtime; one that does runs once per
// instance, with the instance's secret (instance.mcp).
type mcpServer struct {
	cfg     config.MCPServer
	dir     string        // the config's directory: relative commands and paths mean what the file says
	timeout time.Duration // 0: mcpsrc's default
	secrets []string      // the provided secrets it takes, sorted; none: shared
	shared  *mcpsrc.Source
}

// openMCP makes the config's MCP servers sources of tools, and starts the
// eager ones.
func (r *Runtime) openMCP(ctx context.Context, cfg *config.File) {
	for _, s := range cfg.MCPServers {
		timeout, _ := time.ParseDuration(s.Timeout) // Validate checked it; 0: the default
		srv := &mcpServer{cfg: s, timeout: timeout, secrets: envref.Secrets(s.Env, s.Headers)}
		if cfg.Path != "" {
			srv.dir = filepath.Dir(cfg.Path)
		}
		if r.mcp == nil {
			r.mcp = map[string]*mcpServer{}
		}
		r.mcp[s.Name] = srv
		if len(srv.secrets) > 0 {
			continue // started by each instance that uses it
		}
		srv.shared = srv.source(nil)
		if s.Start == "eager" {
			if _, err := r.mcpTools(ctx, srv.shared); err != nil {
				r.logger.Warn("an MCP server failed to start; it is tried again when used", "server", s.Name, "err", err)
			}
		}
	}
}

// source returns a new source of the server, its references to provided
// secrets resolved from secrets.
func (s *mcpServer) source(secrets map[string]string) *mcpsrc.Source {
	lookup := func(ref envref.Ref) string {
		if ref.Secret {
			return secrets[ref.Name]
		}
		return os.Getenv(ref.Name)
	}
	return mcpsrc.New(s.cfg.Name, mcpConnect(s.cfg, s.dir, lookup), s.timeout)
}

// instanceSource returns the source of a server that takes provided
// secrets for instance in, whose secrets are loaded: the one it has, or a
// new one if it has none or its secrets changed since. The caller holds
// the instance's slot.
func (s *mcpServer) instanceSource(r *Runtime, in *instance) (*instanceMCP, error) {
	h := sha256.New()
	for _, n := range s.secrets {
		v, ok := in.secrets.values[n]
		if !ok {
			return nil, fmt.Errorf("MCP server %q takes the provided secret %s, which instance %q has not been given yet", s.cfg.Name, n, in.key)
		}
		h.Write([]byte(n + "\x00" + v + "\x00"))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	m := in.mcp[s.cfg.Name]
	if m != nil && m.sum == sum {
		return m, nil
	}
	if m != nil {
		r.closeMCPLater(m.src) // a secret provided anew: the server restarts with it
	}
	if in.mcp == nil {
		in.mcp = map[string]*instanceMCP{}
	}
	m = &instanceMCP{src: s.source(in.secrets.values), sum: sum}
	in.mcp[s.cfg.Name] = m
	return m, nil
}

// instanceMCP is an instance's own source of a server that takes provided
// secrets, with the catalog its agent was offered from it.
type instanceMCP struct {
	src *mcpsrc.Source
	sum [sha256.Size]byte // of the secrets it was started with
	cat mcpCatalog
}

// closeMCPLater closes src without waiting: a command's process may take
// a moment to end. Close waits for it.
func (r *Runtime) closeMCPLater(src *mcpsrc.Source) {
	r.mcpClosing.Add(1)
	go func() {
		defer r.mcpClosing.Done()
		if err := src.Close(); err != nil {
			r.logger.Warn("closing an MCP server failed", "server", src.Name(), "err", err)
		}
	}()
}

// closeMCP closes an evicted instance's MCP servers. The cache's lock is
// held and no turn uses the instance.
func (in *instance) closeMCP() {
	for _, m := range in.mcp {
		in.agent.rt.closeMCPLater(m.src)
	}
	in.mcp = nil
}

// mcpConnect returns how to reach server s: its command, started anew
// each time in dir, or its URL; lookup resolves the references of its env
// and headers.
func mcpConnect(s config.MCPServer, dir string, lookup func(envref.Ref) string) mcpsrc.Connect {
	if s.URL != "" {
		hdr := http.Header{}
		for k, v := range s.Headers {
			hdr.Set(k, envref.Expand(v, lookup))
		}
		client := &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: hdr}}
		return func(context.Context) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client}, nil
		}
	}
	env := mcpEnv(s.Env, lookup)
	return func(context.Context) (mcp.Transport, error) {
		// Not the connection's context: the process outlives the call
		// that started it, until the source closes it.
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		dieWithParent(cmd)
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
}

// mcpEnv is a server command's environment: inheritedEnv, then env with
// its references resolved by lookup.
func mcpEnv(env map[string]string, lookup func(envref.Ref) string) []string {
	var out []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+envref.Expand(env[k], lookup))
	}
	return out
}

// headerTransport adds a server's headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.header {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// closeMCP closes the MCP servers, and the processes of the stdio ones:
// the shared ones, the cached instances' (the caller passes them, taken
// from the cache as it empties it) and those closing already.
func (r *Runtime) closeMCP(instances []*instance) error {
	var errs []error
	for _, in := range instances {
		for _, m := range in.mcp {
			errs = append(errs, m.src.Close())
		}
		in.mcp = nil
	}
	for _, s := range r.mcp {
		if s.shared != nil {
			errs = append(errs, s.shared.Close())
		}
	}
	r.mcpClosing.Wait()
	return errors.Join(errs...)
}

// agentMCP is an MCP server an agent takes tools from.
type agentMCP struct {
	srv   *mcpServer
	allow map[string]bool // the tools it may call; nil: all
	cat   mcpCatalog      // from the shared source; an instance's own keeps its own
}

// mcpCatalog is what an agent was offered from one source: the listing,
// and the tools made of it, kept while the listing stays the same.
type mcpCatalog struct {
	mu    sync.Mutex
	from  []*mcp.Tool     // the listing tools was made from
	tools []pipeline.Tool // from, as the agent's tools
}

// useMCP gives agent a the config's MCP servers.
func (a *agent) useMCP(ac config.Agent) {
	for _, m := range ac.MCPServers {
		am := &agentMCP{srv: a.rt.mcp[m.Server]}
		if len(m.Tools) > 0 {
			am.allow = map[string]bool{}
			for _, t := range m.Tools {
				am.allow[t] = true
			}
		}
		a.mcp = append(a.mcp, am)
	}
}

// stepTools returns the tools a step of instance in offers: the agent's,
// and its MCP servers' as they are listed now. A server that cannot be
// reached keeps offering the tools it had, whose calls then say it is
// down; one never reached offers none, as does one that takes a provided
// secret the instance has not been given. The caller holds the instance's
// slot.
func (a *agent) stepTools(ctx context.Context, in *instance) []pipeline.Tool {
	if len(a.mcp) == 0 {
		return a.tools
	}
	tools := append(make([]pipeline.Tool, 0, len(a.tools)+16), a.tools...)
	for _, m := range a.mcp {
		tools = append(tools, m.catalog(ctx, a, in)...)
	}
	return tools
}

// catalog returns the tools instance in is offered from the server.
func (m *agentMCP) catalog(ctx context.Context, a *agent, in *instance) []pipeline.Tool {
	src, cat := m.srv.shared, &m.cat
	if src == nil {
		im, err := m.instanceSource(ctx, a, in)
		if err != nil {
			// Each new reason is logged once, not at every step.
			if in.mcpWarned[m.srv.cfg.Name] != err.Error() {
				if in.mcpWarned == nil {
					in.mcpWarned = map[string]string{}
				}
				in.mcpWarned[m.srv.cfg.Name] = err.Error()
				a.logger.Warn("an MCP server's tools are not offered", "server", m.srv.cfg.Name, "instance", in.key, "err", err)
			}
			return nil
		}
		delete(in.mcpWarned, m.srv.cfg.Name)
		src, cat = im.src, &im.cat
	}
	listed, err := a.rt.mcpTools(ctx, src)
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if err != nil {
		a.logger.Warn("an MCP server's tools are not listed", "server", src.Name(), "err", in.secrets.redactor.Redact(err.Error()))
		return cat.tools
	}
	if len(listed) > 0 && len(cat.from) == len(listed) && &cat.from[0] == &listed[0] {
		return cat.tools // the same listing
	}
	cat.from, cat.tools = listed, nil
	for _, t := range listed {
		if m.allow != nil && !m.allow[t.Name] {
			continue
		}
		pt, err := mcpTool(src, t)
		if err != nil {
			a.logger.Warn("an MCP tool is not offered", "server", src.Name(), "tool", t.Name, "err", err)
			continue
		}
		cat.tools = append(cat.tools, pt)
	}
	return cat.tools
}

// instanceSource returns instance in's own source of the server, which
// takes provided secrets.
func (m *agentMCP) instanceSource(ctx context.Context, a *agent, in *instance) (*instanceMCP, error) {
	if err := in.loadSecrets(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return m.srv.instanceSource(a.rt, in)
}

// mcpTool is MCP tool t of src as a tool of the agent: named
// <server>__<tool>, of category mcp, with the tool's input schema.
func mcpTool(src *mcpsrc.Source, t *mcp.Tool) (pipeline.Tool, error) {
	name := src.Name() + "__" + t.Name
	params, err := plainjson.Marshal(t.InputSchema) // the model may read it as text (XML tools)
	if err != nil {
		return pipeline.Tool{}, err
	}
	if string(params) == "null" {
		params = nil
	}
	tool := t.Name
	pt := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: name, Description: strings.TrimSpace(t.Description), Parameters: params, Category: pipeline.CategoryMCP},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			res, err := src.Call(ctx, tool, c.Arguments())
			if err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: res.Text, IsError: res.IsError}, nil
		}}
	return pt, pt.Validate()
}

// mcpTools lists src's tools, through the tape if there is one: replaying,
// the recorded listing stands for the server.
func (r *Runtime) mcpTools(ctx context.Context, src *mcpsrc.Source) ([]*mcp.Tool, error) {
	if r.tape == nil {
		return src.Tools(ctx)
	}
	b, err := r.tape.MCPTools(src.Name(), func() ([]byte, error) {
		tools, err := src.Tools(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(tools)
	})
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, err
	}
	return tools, nil
}
