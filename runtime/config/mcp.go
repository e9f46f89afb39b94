package config

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/ganglion-dev/ganglion/internal/envref"
	"github.com/ganglion-dev/ganglion/store"
)

// The values of [MCPServer.Start].
const (
	mcpStartLazy  = "lazy"  // the default: at the first step of an agent that uses it
	mcpStartEager = "eager" // when the runtime starts
)

// mcpServerName is what a server's name may be: it prefixes its tools'
// names, which providers limit to [A-Za-z0-9_-].
var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// secretName says whether an env variable or header, by its name, holds
// a secret, which must not be written in clear.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "AUTHORIZATION", "CREDENTIAL"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// decodeAgentMCP decodes an agent's mcp_servers entry from its YAML text
// b: a server's name, the short form of {server: name}, or a mapping. The
// checker has checked its shape, which shortForms allows.
func decodeAgentMCP(m *AgentMCP, b []byte) error {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return err
	}
	if name, ok := v.(string); ok {
		*m = AgentMCP{Server: name}
		return nil
	}
	type plain AgentMCP // without this decoder
	return yaml.UnmarshalWithOptions(b, (*plain)(m), yaml.DisallowUnknownField())
}

// mcpServers checks the file's MCP servers and the agents' use of them.
func (v *validator) mcpServers() {
	first := map[string]int{}
	for i, s := range v.f.MCPServers {
		path := "$.mcp_servers[" + strconv.Itoa(i) + "]"
		pre := "mcp_servers[" + strconv.Itoa(i) + "]: "
		switch {
		case s.Name == "":
			v.errorf(path, "%sname is required", pre)
		case !mcpServerName.MatchString(s.Name) || strings.Contains(s.Name, "__"):
			v.errorf(path+".name", "%sname %q: use 1 to 32 letters, digits, '_' or '-', without \"__\" (it prefixes its tools' names)", pre, s.Name)
		default:
			if j, dup := first[s.Name]; dup {
				v.errorf(path+".name", "duplicate MCP server name %q (first at %s)", s.Name, v.firstAt("$.mcp_servers["+strconv.Itoa(j)+"].name"))
			} else {
				first[s.Name] = i
			}
			pre = "MCP server " + strconv.Quote(s.Name) + ": "
		}
		switch {
		case len(s.Command) == 0 && s.URL == "":
			v.errorf(path, "%sa command (a stdio server) or a url (a streamable-HTTP server) is required", pre)
		case len(s.Command) > 0 && s.URL != "":
			v.errorf(path+".url", "%sa command or a url, not both", pre)
		case len(s.Command) > 0 && s.Command[0] == "":
			v.errorf(path+".command[0]", "%sthe command's program is empty", pre)
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
				v.errorf(path+".url", "%surl %q: want an http or https URL with a host", pre, s.URL)
			}
		}
		if len(s.Headers) > 0 && s.URL == "" {
			v.errorf(path+".headers", "%sheaders are for a url server", pre)
		}
		v.refs(path+".env", pre+"env", s.Env)
		v.refs(path+".headers", pre+"headers", s.Headers)
		switch s.Start {
		case "", mcpStartLazy:
		case mcpStartEager:
			if n := envref.Secrets(s.Env, s.Headers); len(n) > 0 {
				v.errorf(path+".start", "%sstart eager: the server takes the provided secret %s, so it starts for each instance at its first step, never before", pre, n[0])
			}
		default:
			v.errorf(path+".start", "%sstart %q: want lazy (the default) or eager", pre, s.Start)
		}
		if s.Timeout != "" {
			if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 || d > time.Hour {
				v.errorf(path+".timeout", "%stimeout %q: want a duration from 1ms to 1h, as in \"30s\"", pre, s.Timeout)
			}
		}
	}
	for i, a := range v.f.Agents {
		seen := map[string]bool{}
		for j, m := range a.MCPServers {
			path := "$.agents[" + strconv.Itoa(i) + "].mcp_servers[" + strconv.Itoa(j) + "]"
			pre := "agent " + strconv.Quote(a.Name) + ": "
			switch _, ok := first[m.Server]; {
			case m.Server == "":
				v.errorf(path, "%smcp_servers[%d]: server is required", pre, j)
			case !ok:
				v.errorf(path+".server", "%sunknown MCP server %q (mcp_servers: %s)", pre, m.Server, strings.Join(mcpNames(v.f), ", "))
			case seen[m.Server]:
				v.errorf(path+".server", "%sMCP server %q is listed twice", pre, m.Server)
			}
			seen[m.Server] = true
			for k, t := range m.Tools {
				if t == "" || slices.Index(m.Tools, t) != k {
					v.errorf(path+".tools["+strconv.Itoa(k)+"]", "%sMCP server %q: tool %q is empty or listed twice", pre, m.Server, t)
				}
			}
		}
	}
}

// refs checks the ${VAR} and ${secret:NAME} references of an env or
// headers map, and that a value whose name says it is a secret takes it
// from one.
func (v *validator) refs(path, what string, m map[string]string) {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		val := m[k]
		refs := envref.Refs(val)
		for _, ref := range refs {
			kind := "an environment variable's"
			if ref.Secret {
				kind = "a provided secret's"
			}
			if store.ValidateEnvName("name", ref.Name) != nil {
				v.errorf(path+"."+k, "%s %s: %s is not %s name (want [A-Za-z_][A-Za-z0-9_]{0,63})", what, k, ref, kind)
			}
		}
		if secretName(k) && len(refs) == 0 {
			v.errorf(path+"."+k, "%s %s: a secret is never written here: take it from the environment, as %s: ${%s}, or from a secret provided to the instance, as ${secret:%[4]s}", what, k, k, envName(k))
		}
	}
}

// envName suggests an environment variable's name for k.
func envName(k string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(k))
}

func mcpNames(f *File) []string {
	var out []string
	for _, s := range f.MCPServers {
		out = append(out, s.Name)
	}
	if len(out) == 0 {
		return []string{"none defined"}
	}
	return out
}
