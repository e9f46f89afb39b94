package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/mcpsrc"
)

// inheritedEnv are the variables of the runtime's environment an MCP
// server's command gets besides its env: what programs need to run, and
// no secret of the runtime's (a provider's API key).
var inheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// openMCP makes the config's MCP servers sources of tools, and starts the
// eager ones.
func (r *Runtime) openMCP(ctx context.Context, cfg *config.File) {
	for _, s := range cfg.MCPServers {
		timeout, _ := time.ParseDuration(s.Timeout) // Validate checked it; 0: the default
		dir := ""                                   // the config's directory: relative commands and paths mean what the file says
		if cfg.Path != "" {
			dir = filepath.Dir(cfg.Path)
		}
		src := mcpsrc.New(s.Name, mcpConnect(s, dir), timeout)
		if r.mcp == nil {
			r.mcp = map[string]*mcpsrc.Source{}
		}
		r.mcp[s.Name] = src
		if s.Start == "eager" {
			if _, err := r.mcpTools(ctx, src); err != nil {
				r.logger.Warn("an MCP server failed to start; it is tried again when used", "server", s.Name, "err", err)
			}
		}
	}
}

// mcpConnect returns how to reach server s: its command, started anew
// each time in dir, or its URL.
func mcpConnect(s config.MCPServer, dir string) mcpsrc.Connect {
	if s.URL != "" {
		hdr := http.Header{}
		for k, v := range s.Headers {
			hdr.Set(k, os.ExpandEnv(v))
		}
		client := &http.Client{Transport: headerTransport{base: http.DefaultTransport, header: hdr}}
		return func(context.Context) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client}, nil
		}
	}
	return func(context.Context) (mcp.Transport, error) {
		// Not the connection's context: the process outlives the call
		// that started it, until the source closes it.
		cmd := exec.Command(s.Command[0], s.Command[1:]...)
		cmd.Dir = dir
		cmd.Env = mcpEnv(s.Env)
		dieWithParent(cmd)
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
}

// mcpEnv is a server command's environment: inheritedEnv, then env with
// its ${VAR} references expanded from the runtime's environment.
func mcpEnv(env map[string]string) []string {
	var out []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+os.ExpandEnv(v))
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

// closeMCP closes the MCP servers, and the processes of the stdio ones.
func (r *Runtime) closeMCP() error {
	var errs []error
	for _, src := range r.mcp {
		errs = append(errs, src.Close())
	}
	return errors.Join(errs...)
}

// agentMCP is an MCP server an agent takes tools from.
type agentMCP struct {
	src   *mcpsrc.Source
	allow map[string]bool // the tools it may call; nil: all

	mu    sync.Mutex
	from  []*mcp.Tool     // the listing tools was made from
	tools []pipeline.Tool // from, as the agent's tools
}

// useMCP gives agent a the config's MCP servers.
func (a *agent) useMCP(ac config.Agent) {
	for _, m := range ac.MCPServers {
		am := &agentMCP{src: a.rt.mcp[m.Server]}
		if len(m.Tools) > 0 {
			am.allow = map[string]bool{}
			for _, t := range m.Tools {
				am.allow[t] = true
			}
		}
		a.mcp = append(a.mcp, am)
	}
}

// stepTools returns the tools a step offers: the agent's, and its MCP
// servers' as they are listed now. A server that cannot be reached keeps
// offering the tools it had, whose calls then say it is down; one never
// reached offers none.
func (a *agent) stepTools(ctx context.Context) []pipeline.Tool {
	if len(a.mcp) == 0 {
		return a.tools
	}
	tools := append(make([]pipeline.Tool, 0, len(a.tools)+16), a.tools...)
	for _, m := range a.mcp {
		tools = append(tools, m.catalog(ctx, a)...)
	}
	return tools
}

func (m *agentMCP) catalog(ctx context.Context, a *agent) []pipeline.Tool {
	listed, err := a.rt.mcpTools(ctx, m.src)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		a.logger.Warn("an MCP server's tools are not listed", "server", m.src.Name(), "err", err)
		return m.tools
	}
	if len(listed) > 0 && len(m.from) == len(listed) && &m.from[0] == &listed[0] {
		return m.tools // the same listing
	}
	m.from, m.tools = listed, nil
	for _, t := range listed {
		if m.allow != nil && !m.allow[t.Name] {
			continue
		}
		pt, err := mcpTool(m.src, t)
		if err != nil {
			a.logger.Warn("an MCP tool is not offered", "server", m.src.Name(), "tool", t.Name, "err", err)
			continue
		}
		m.tools = append(m.tools, pt)
	}
	return m.tools
}

// mcpTool is MCP tool t of src as a tool of the agent: named
// <server>__<tool>, of category mcp, with the tool's input schema.
func mcpTool(src *mcpsrc.Source, t *mcp.Tool) (pipeline.Tool, error) {
	name := src.Name() + "__" + t.Name
	params, err := json.Marshal(t.InputSchema)
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
