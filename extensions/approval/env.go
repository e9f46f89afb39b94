package approval

import (
	"encoding/json"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/expr-lang/expr"

	"github.com/ganglion-dev/ganglion/extensions/approval/shell"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Env is what a rule's when expression sees.
type Env struct {
	// Tool is the called tool: tool.name, tool.category.
	Tool ToolInfo `expr:"tool"`
	// Args are the call's arguments, decoded from JSON (an object; {} when
	// they are not one).
	Args map[string]any `expr:"args"`
	// Agent, Instance, Turn and Step say where the call is.
	Agent    string `expr:"agent"`
	Instance string `expr:"instance"`
	Turn     string `expr:"turn"`
	Step     int    `expr:"step"`
	// Paths are the path-like arguments, cleaned and made relative to the
	// workspace when inside it: the values of arguments named path, file,
	// dir, source, destination, target (or ending in _path, _file, _dir),
	// and for execute_command the literal arguments of its commands that
	// are not flags.
	Paths []string `expr:"paths"`
	// Shell is the parsed command of an execute_command call (empty for
	// other tools, and when the command does not parse: see ShellError).
	Shell shell.Script `expr:"shell"`
	// ShellError is why the command did not parse, or "".
	ShellError string `expr:"shellError"`
	// Chain is the call chain of agents that led to this turn.
	Chain Chain `expr:"chain"`
}

// ToolInfo describes the called tool. For a tool of an MCP server
// (category mcp, named <server>__<tool>), Server and ServerTool are the
// server's name and the tool's name on it.
type ToolInfo struct {
	Name       string `expr:"name"`
	Category   string `expr:"category"`
	Server     string `expr:"server"`
	ServerTool string `expr:"serverTool"`
}

// Chain is the chain of agent calls the turn belongs to.
type Chain struct {
	// Depth is 0 for a turn a user started, 1 for one another agent
	// started, and so on.
	Depth int `expr:"depth"`
	// Agents are the agents of the chain, the first caller first; the
	// current agent is not included.
	Agents []string `expr:"agents"`
}

// Call is a tool call to decide on.
type Call struct {
	Tool      string
	Category  pipeline.ToolCategory // "" when the tool is not known
	Args      json.RawMessage
	Agent     string
	Instance  string
	Turn      string
	Step      int
	Chain     []string
	Workspace string // the agent's workspace directory, for paths
}

// Call is the call the document describes, with paths resolved against
// workspace.
func (c CallDoc) Call(workspace string) Call {
	args, _ := jsonMarshal(c.Args)
	if c.Args == nil {
		args = []byte("{}")
	}
	return Call{Tool: c.Tool, Args: args, Agent: c.Agent, Instance: c.Instance, Chain: c.Chain, Workspace: workspace}
}

// env builds the environment of a call.
func (r *Rules) env(c Call) Env {
	e := Env{Agent: c.Agent, Instance: c.Instance, Turn: c.Turn, Step: c.Step,
		Chain: Chain{Depth: len(c.Chain), Agents: c.Chain}, Paths: []string{}}
	cat := c.Category
	if over, ok := r.categories[c.Tool]; ok {
		cat = over
	}
	if cat == "" {
		cat = builtinCategory(c.Tool)
	}
	e.Tool = ToolInfo{Name: c.Tool, Category: string(cat)}
	if cat == pipeline.CategoryMCP {
		e.Tool.Server, e.Tool.ServerTool, _ = strings.Cut(c.Tool, "__")
	}
	if err := json.Unmarshal(c.Args, &e.Args); err != nil || e.Args == nil {
		e.Args = map[string]any{}
	}
	for k, v := range e.Args {
		if s, ok := v.(string); ok && pathLike(k) {
			e.Paths = append(e.Paths, resolve(c.Workspace, s))
		}
	}
	if c.Tool == "execute_command" {
		if cmd, ok := e.Args["command"].(string); ok {
			sc, err := shell.Parse(cmd)
			if err != nil {
				e.ShellError = err.Error()
			} else {
				e.Shell = sc
				for _, cm := range sc.Commands {
					for _, a := range cm.Args {
						if a != "" && !strings.HasPrefix(a, "-") {
							e.Paths = append(e.Paths, resolve(c.Workspace, a))
						}
					}
				}
			}
		}
	}
	return e
}

// builtinCategory is the category of the workspace tools.
func builtinCategory(tool string) pipeline.ToolCategory {
	switch tool {
	case "read_file", "list_files", "search_files":
		return pipeline.CategoryRead
	case "write_file", "edit_file", "delete_file":
		return pipeline.CategoryWrite
	case "execute_command", "run_code":
		return pipeline.CategoryExecute
	}
	return pipeline.CategoryOther
}

func pathLike(key string) bool {
	switch key {
	case "path", "file", "filename", "dir", "directory", "source", "destination", "target", "src", "dst":
		return true
	}
	return strings.HasSuffix(key, "_path") || strings.HasSuffix(key, "_file") || strings.HasSuffix(key, "_dir")
}

// resolve cleans p and makes it relative to the workspace when it is
// inside it; a path outside stays absolute (or climbs with ..).
func resolve(workspace, p string) string {
	if strings.HasPrefix(p, "~") {
		return p // the shell's home: outside any workspace
	}
	if workspace != "" && filepath.IsAbs(p) {
		if rel, err := filepath.Rel(workspace, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
		return filepath.ToSlash(filepath.Clean(p))
	}
	return path.Clean(filepath.ToSlash(p))
}

// under reports whether p is dir or inside it, lexically.
func under(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	if dir == "." {
		return !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
	}
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func validGlob(p string) bool { return doublestar.ValidatePattern(p) }

// glob matches p against pattern (** crosses directories); a path
// starting with ./ matches as without it.
func glob(pattern, p string) bool {
	ok, _ := doublestar.Match(pattern, strings.TrimPrefix(p, "./"))
	return ok
}

// functionsFor are the helper functions of a rules file's expressions.
func (r *Rules) functionsFor() []expr.Option {
	return []expr.Option{
		expr.Function("glob", func(p ...any) (any, error) { return glob(p[0].(string), p[1].(string)), nil },
			new(func(pattern, path string) bool)),
		expr.Function("under", func(p ...any) (any, error) { return under(p[0].(string), p[1].(string)), nil },
			new(func(path, dir string) bool)),
		expr.Function("protected", func(p ...any) (any, error) {
			s := p[0].(string)
			for _, pat := range r.protected {
				if glob(pat, s) {
					return true, nil
				}
			}
			return false, nil
		}, new(func(path string) bool)),
	}
}

func jsonMarshal(v any) ([]byte, error) { return plainjson.Marshal(v) }
