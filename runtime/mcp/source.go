package mcp

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

	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/internal/envref"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/mcpsrc"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	// A server's tool schemas may use any keyword of JSON Schema.
	_ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
)

func init() { seam.MCP = open }

// inheritedEnv are the variables of the runtime's environment an MCP
// server's command gets besides its env: what programs need to run, and
// no secret of the runtime's (a provider's API key).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// servers is the tool source of the config's MCP servers: each agent
// that lists some is offered their tools.
type servers struct {
	logger *slog.Logger
	tape   tape.Tape // lists tools through it, if set
	byName map[string]*server
	// closing counts the sources closing in the background (an evicted
	// instance's, or one restarted with new secrets); Close waits for
	// them.
	closing sync.WaitGroup
	// mu guards instances: the sources of the servers that take provided
	// secrets, by instance. Each instance's entry is used only by the
	// step holding its slot.
	mu        sync.Mutex
	instances map[instanceID]*instanceState
}

type instanceID struct{ agent, key string }

// instanceState is what an instance has of the servers that take
// provided secrets.
type instanceState struct {
	// sources are its own, by server name; closed when it leaves memory.
	sources map[string]*instanceSource
	// warned is, by server name, why its tools were last not offered to
	// the instance, so that a reason is logged once.
	warned map[string]string
}

// server is an MCP server of the config. One that takes no provided
// secret is one source for the runtime; one that does runs once per
// instance, with the instance's secrets.
type server struct {
	cfg     config.MCPServer
	dir     string        // the config's directory: relative commands and paths mean what the file says
	timeout time.Duration // 0: mcpsrc's default
	secrets []string      // the provided secrets it takes, sorted; none: shared
	shared  *mcpsrc.Source
}

// open makes the config's MCP servers sources of tools, and starts the
// eager ones.
func open(ctx context.Context, env seam.Env) (seam.ToolSource, error) {
	s := &servers{logger: env.Logger, tape: env.Tape, byName: map[string]*server{}, instances: map[instanceID]*instanceState{}}
	cfg := env.Config
	for _, c := range cfg.MCPServers {
		timeout, _ := time.ParseDuration(c.Timeout) // Validate checked it; 0: the default
		srv := &server{cfg: c, timeout: timeout, secrets: envref.Secrets(c.Env, c.Headers)}
		if cfg.Path != "" {
			srv.dir = filepath.Dir(cfg.Path)
		}
		s.byName[c.Name] = srv
		if len(srv.secrets) > 0 {
			continue // started by each instance that uses it
		}
		srv.shared = srv.source(nil)
		if c.Start == "eager" {
			if _, err := s.tools(ctx, srv.shared); err != nil {
				s.logger.Warn("an MCP server failed to start; it is tried again when used", "server", c.Name, "err", err)
			}
		}
	}
	return s, nil
}

// source returns a new source of the server, its references to provided
// secrets resolved from secrets.
func (s *server) source(secrets map[string]string) *mcpsrc.Source {
	lookup := func(ref envref.Ref) string {
		if ref.Secret {
			return secrets[ref.Name]
		}
		return os.Getenv(ref.Name)
	}
	return mcpsrc.New(s.cfg.Name, connect(s.cfg, s.dir, lookup), s.timeout)
}

// instanceSource returns the source of server srv, which takes provided
// secrets, for instance in, whose secrets are secrets: the one it has, or
// a new one if it has none or its secrets changed since. The caller holds
// the instance's slot.
func (s *servers) instanceSource(srv *server, st *instanceState, in seam.Instance, secrets map[string]string) (*instanceSource, error) {
	h := sha256.New()
	for _, n := range srv.secrets {
		v, ok := secrets[n]
		if !ok {
			return nil, fmt.Errorf("MCP server %q takes the provided secret %s, which instance %q has not been given yet", srv.cfg.Name, n, in.Key())
		}
		h.Write([]byte(n + "\x00" + v + "\x00"))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	m := st.sources[srv.cfg.Name]
	if m != nil && m.sum == sum {
		return m, nil
	}
	if m != nil {
		s.closeLater(m.src) // a secret provided anew: the server restarts with it
	}
	if st.sources == nil {
		st.sources = map[string]*instanceSource{}
	}
	m = &instanceSource{src: srv.source(secrets), sum: sum}
	st.sources[srv.cfg.Name] = m
	return m, nil
}

// instanceSource is an instance's own source of a server that takes
// provided secrets, with the catalog its agent was offered from it.
type instanceSource struct {
	src *mcpsrc.Source
	sum [sha256.Size]byte // of the secrets it was started with
	cat catalog
}

// closeLater closes src without waiting: a command's process may take a
// moment to end. Close waits for it.
func (s *servers) closeLater(src *mcpsrc.Source) {
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		if err := src.Close(); err != nil {
			s.logger.Warn("closing an MCP server failed", "server", src.Name(), "err", err)
		}
	}()
}

// Evicted closes the sources of instance in, which left memory.
func (s *servers) Evicted(in seam.Instance) {
	id := instanceID{in.Agent(), in.Key()}
	s.mu.Lock()
	st := s.instances[id]
	delete(s.instances, id)
	s.mu.Unlock()
	if st != nil {
		for _, m := range st.sources {
			s.closeLater(m.src)
		}
	}
}

// state returns what instance in has of the servers that take provided
// secrets.
func (s *servers) state(in seam.Instance) *instanceState {
	id := instanceID{in.Agent(), in.Key()}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.instances[id]
	if st == nil {
		st = &instanceState{}
		s.instances[id] = st
	}
	return st
}

// connect returns how to reach server s: its command, started anew each
// time in dir, or its URL; lookup resolves the references of its env and
// headers.
func connect(s config.MCPServer, dir string, lookup func(envref.Ref) string) mcpsrc.Connect {
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
	env := commandEnv(s.Env, lookup)
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

// commandEnv is a server command's environment: inheritedEnv, then env
// with its references resolved by lookup.
func commandEnv(env map[string]string, lookup func(envref.Ref) string) []string {
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

// Close closes the MCP servers, and the processes of the stdio ones: the
// shared ones, the instances' and those closing already.
func (s *servers) Close() error {
	var errs []error
	s.mu.Lock()
	instances := s.instances
	s.instances = map[instanceID]*instanceState{}
	s.mu.Unlock()
	for _, st := range instances {
		for _, m := range st.sources {
			errs = append(errs, m.src.Close())
		}
	}
	for _, srv := range s.byName {
		if srv.shared != nil {
			errs = append(errs, srv.shared.Close())
		}
	}
	s.closing.Wait()
	return errors.Join(errs...)
}

// agentServer is an MCP server an agent takes tools from.
type agentServer struct {
	srv   *server
	allow map[string]bool // the tools it may call; nil: all
	cat   catalog         // from the shared source; an instance's own keeps its own
}

// catalog is what an agent was offered from one source: the listing, and
// the tools made of it, kept while the listing stays the same.
type catalog struct {
	mu    sync.Mutex
	from  []*mcp.Tool     // the listing tools was made from
	tools []pipeline.Tool // from, as the agent's tools
}

// ForAgent returns the tools agent is offered from its MCP servers, as
// they are listed at each step; nil if it lists none.
func (s *servers) ForAgent(agent config.Agent) seam.StepTools {
	if len(agent.MCPServers) == 0 {
		return nil
	}
	var list []*agentServer
	for _, m := range agent.MCPServers {
		as := &agentServer{srv: s.byName[m.Server]}
		if len(m.Tools) > 0 {
			as.allow = map[string]bool{}
			for _, t := range m.Tools {
				as.allow[t] = true
			}
		}
		list = append(list, as)
	}
	if len(list) == 1 {
		return func(ctx context.Context, in seam.Instance) []pipeline.Tool {
			return s.catalog(ctx, list[0], in)
		}
	}
	return func(ctx context.Context, in seam.Instance) []pipeline.Tool {
		var tools []pipeline.Tool
		for _, as := range list {
			tools = append(tools, s.catalog(ctx, as, in)...)
		}
		return tools
	}
}

// catalog returns the tools instance in is offered from server as: those
// listed now. A server that cannot be reached keeps offering the tools it
// had, whose calls then say it is down; one never reached offers none, as
// does one that takes a provided secret the instance has not been given.
// The caller holds the instance's slot.
func (s *servers) catalog(ctx context.Context, as *agentServer, in seam.Instance) []pipeline.Tool {
	src, cat := as.srv.shared, &as.cat
	if src == nil {
		st := s.state(in)
		secrets, err := in.Secrets(context.WithoutCancel(ctx))
		var is *instanceSource
		if err == nil {
			is, err = s.instanceSource(as.srv, st, in, secrets)
		}
		if err != nil {
			// Each new reason is logged once, not at every step.
			name := as.srv.cfg.Name
			if st.warned[name] != err.Error() {
				if st.warned == nil {
					st.warned = map[string]string{}
				}
				st.warned[name] = err.Error()
				s.logger.Warn("an MCP server's tools are not offered", "agent", in.Agent(), "server", name, "instance", in.Key(), "err", err)
			}
			return nil
		}
		delete(st.warned, as.srv.cfg.Name)
		src, cat = is.src, &is.cat
	}
	listed, err := s.tools(ctx, src)
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if err != nil {
		s.logger.Warn("an MCP server's tools are not listed", "server", src.Name(), "err", in.Redact(err.Error()))
		return cat.tools
	}
	if len(listed) > 0 && len(cat.from) == len(listed) && &cat.from[0] == &listed[0] {
		return cat.tools // the same listing
	}
	cat.from, cat.tools = listed, nil
	for _, t := range listed {
		if as.allow != nil && !as.allow[t.Name] {
			continue
		}
		pt, err := toolOf(src, t)
		if err != nil {
			s.logger.Warn("an MCP tool is not offered", "server", src.Name(), "tool", t.Name, "err", err)
			continue
		}
		cat.tools = append(cat.tools, pt)
	}
	return cat.tools
}

// toolOf is MCP tool t of src as a tool of the agent: named
// <server>__<tool>, of category mcp, with the tool's input schema.
func toolOf(src *mcpsrc.Source, t *mcp.Tool) (pipeline.Tool, error) {
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

// tools lists src's tools, through the tape if there is one: replaying,
// the recorded listing stands for the server.
func (s *servers) tools(ctx context.Context, src *mcpsrc.Source) ([]*mcp.Tool, error) {
	if s.tape == nil {
		return src.Tools(ctx)
	}
	b, err := s.tape.MCPTools(src.Name(), func() ([]byte, error) {
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
