package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/ganglion-dev/ganglion/store"
)

// Known tells [File.Validate] which tools, extensions and model providers
// exist. Of each kind, the has func (Tool, ...) decides, else the list of
// the names func (ToolNames, ...), which errors quote; with neither, names
// are not checked. Validate calls them before it returns, each names func
// once.
type Known struct {
	// Tool reports whether a tool exists.
	Tool func(name string) bool
	// ToolNames lists them, for errors.
	ToolNames func() []string
	// Extension reports whether a native extension exists; WASM ones are
	// not checked.
	Extension func(name string) bool
	// ExtensionNames lists them.
	ExtensionNames func() []string
	// Provider reports whether a model provider exists.
	Provider func(name string) bool
	// ProviderNames lists them.
	ProviderNames func() []string
	// ProviderImport returns the package that registers a provider the
	// program did not link ("": none), which is then refused as not linked
	// rather than unknown.
	ProviderImport func(name string) string
	// ModelSupplied accepts agents without a model (runtime.WithModel).
	ModelSupplied bool
	// Import returns the package to import for a top-level key the program
	// did not link (mcp_servers, telemetry), which is refused; "": linked.
	Import func(key string) string
}

// nameSet is one kind of Known, prepared for one Validate call.
type nameSet struct {
	has   func(string) bool
	names []string // sorted; nil if the kind cannot list its names
}

func newNameSet(has func(string) bool, names func() []string) nameSet {
	s := nameSet{has: has}
	if names != nil {
		s.names = slices.Clone(names())
		if s.names == nil {
			s.names = []string{}
		}
		slices.Sort(s.names)
		s.names = slices.Compact(s.names)
		if s.has == nil {
			s.has = func(name string) bool { _, ok := slices.BinarySearch(s.names, name); return ok }
		}
	}
	return s
}

// unknown reports whether name is known not to exist.
func (s nameSet) unknown(name string) bool { return s.has != nil && !s.has(name) }

// hint is " (known: a, b)" when the names are known.
func (s nameSet) hint() string {
	switch {
	case s.names == nil:
		return ""
	case len(s.names) == 0:
		return " (none are registered)"
	}
	return " (known: " + strings.Join(s.names, ", ") + ")"
}

// Validate reports every problem decoding cannot see (names, limits,
// required settings, duplicates, names unknown to k) as an [ErrorList];
// nil: valid. A File built in code gets no positions. Validate does not
// change f.
func (f *File) Validate(k Known) error {
	v := validator{
		f:             f,
		tools:         newNameSet(k.Tool, k.ToolNames),
		extensions:    newNameSet(k.Extension, k.ExtensionNames),
		providers:     newNameSet(k.Provider, k.ProviderNames),
		providerPath:  k.ProviderImport,
		modelSupplied: k.ModelSupplied,
	}
	v.linked(k.Import)
	if f.Model != nil {
		v.model(f.Model, "$.model", "model: ")
	}
	firstAgent := map[string]int{}
	for i := range f.Agents {
		v.agent(i, firstAgent)
	}
	v.teams(firstAgent)
	v.agentCalls(f.AgentCalls)
	v.webhooks(f.Webhooks)
	v.mcpServers()
	v.cluster(f.Cluster)
	v.store(f.Store)
	v.budget(f.TaskBudget, "$.task_budget", "")
	// A key pasted as api_key_env is masked in every excerpt, keeping its
	// length so that carets stay in place.
	for _, k := range v.maybeKeys {
		mask := strings.Repeat("*", utf8.RuneCountInString(k))
		for _, e := range v.errs {
			e.Snippet = strings.ReplaceAll(e.Snippet, k, mask)
		}
	}
	return v.errs.err()
}

// linked refuses the parts of the file that need a package the program did
// not link; imp is Known.Import.
func (v *validator) linked(imp func(string) string) {
	if imp == nil {
		return
	}
	for _, part := range []struct {
		key, what string
		used      bool
	}{
		{"telemetry", "OpenTelemetry export", v.f.Telemetry != nil},
		{"mcp_servers", "MCP", len(v.f.MCPServers) > 0},
		{"cluster", "the cluster", v.f.Cluster != nil},
	} {
		if !part.used {
			continue
		}
		if p := imp(part.key); p != "" {
			v.errorf("$."+part.key, "%s: %s is not linked into this program; add: import _ %q", part.key, part.what, p)
		}
	}
}

// teams checks the teams against the agents (named in agents, by index).
func (v *validator) teams(agents map[string]int) {
	firstTeam := map[string]int{}
	teamOf := map[string]string{} // agent → its team
	for i, t := range v.f.Teams {
		path := "$.teams[" + strconv.Itoa(i) + "]"
		pre := v.name("team", "teams", i, t.Name, firstTeam)
		if len(t.Agents) == 0 {
			v.errorf(path, "%sno agents: list its members under \"agents\"", pre)
		}
		for j, name := range t.Agents {
			ap := path + ".agents[" + strconv.Itoa(j) + "]"
			if _, ok := agents[name]; !ok {
				v.errorf(ap, "%sunknown agent %q (agents: %s)", pre, name, strings.Join(agentNames(v.f), ", "))
				continue
			}
			if other, in := teamOf[name]; in {
				v.errorf(ap, "%sagent %q is in team %q already; an agent belongs to at most one team", pre, name, other)
				continue
			}
			teamOf[name] = t.Name
		}
	}
	for i, a := range v.f.Agents {
		team, in := teamOf[a.Name]
		if !in {
			continue
		}
		if j := slices.Index(a.Tools, ToolCallTeamAgent); j >= 0 {
			v.errorf("$.agents["+strconv.Itoa(i)+"].tools["+strconv.Itoa(j)+"]",
				"agent %q: %s is for agents in no team; %q is in team %q, and a team's agents cannot delegate up or into another team", a.Name, ToolCallTeamAgent, a.Name, team)
		}
	}
}

func agentNames(f *File) []string {
	out := make([]string, len(f.Agents))
	for i, a := range f.Agents {
		out[i] = a.Name
	}
	return out
}

type validator struct {
	f                            *File
	tools, extensions, providers nameSet
	providerPath                 func(string) string // Known.ProviderImport; may be nil
	modelSupplied                bool
	errs                         ErrorList
	maybeKeys                    []string // invalid api_key_env values, masked in excerpts
}

// importOf is the package that would register the provider name, or "".
func (v *validator) importOf(name string) string {
	if v.providerPath == nil {
		return ""
	}
	return v.providerPath(name)
}

// errorf records a problem at the node at path, or at its nearest parent
// present in the file.
func (v *validator) errorf(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if v.f.src == nil {
		v.errs = append(v.errs, &Error{File: v.f.Path, Path: path, Msg: msg})
		return
	}
	v.errs = append(v.errs, v.f.src.errorAtNode(lookup(v.f.src.ast, path), path, msg))
}

// firstAt describes where the node at path is, for "first at ..." hints:
// its line if known, else the path.
func (v *validator) firstAt(path string) string {
	if v.f.src != nil {
		if line, _ := position(lookup(v.f.src.ast, path)); line > 0 {
			return "line " + strconv.Itoa(line)
		}
	}
	return strings.TrimPrefix(path, "$.")
}

// name checks the name of the i-th entry of list (agents, teams) of
// things called what, records it in first, and returns the prefix of the
// entry's errors.
func (v *validator) name(what, list string, i int, name string, first map[string]int) string {
	path := "$." + list + "[" + strconv.Itoa(i) + "].name"
	switch {
	case name == "":
		pre := list + "[" + strconv.Itoa(i) + "]: "
		v.errorf(path, "%sname is required", pre)
		return pre
	case store.ValidateName(what+" name", name) != nil:
		v.errorf(path, "invalid %s name %q: use 1 to 64 letters, digits, '_', '.' or '-'", what, name)
	default:
		if j, dup := first[name]; dup {
			v.errorf(path, "duplicate %s name %q (first at %s)", what, name, v.firstAt("$."+list+"["+strconv.Itoa(j)+"].name"))
		} else {
			first[name] = i
		}
	}
	return fmt.Sprintf("%s %q: ", what, name)
}

func (v *validator) agent(i int, firstAgent map[string]int) {
	a := &v.f.Agents[i]
	path := "$.agents[" + strconv.Itoa(i) + "]"
	pre := v.name("agent", "agents", i, a.Name, firstAgent)

	switch {
	case a.Model == nil && v.f.Model == nil && !v.modelSupplied:
		v.errorf(path, `%sno model: set "model" on the agent or at the top level`, pre)
	case a.Model != nil && a.Model != v.f.Model:
		v.model(a.Model, path+".model", pre+"model: ")
	}

	if a.MaxSteps < 0 || a.MaxSteps > maxStepsLimit {
		v.errorf(path+".max_steps", "%smax_steps must be between 1 and %d, got %d", pre, maxStepsLimit, a.MaxSteps)
	}

	v.budget(a.TaskBudget, path+".task_budget", pre)

	firstTool := map[string]int{}
	for j, t := range a.Tools {
		tp := path + ".tools[" + strconv.Itoa(j) + "]"
		if j0, dup := firstTool[t]; dup {
			v.errorf(tp, "%sduplicate tool %q (first at %s)", pre, t, v.firstAt(path+".tools["+strconv.Itoa(j0)+"]"))
			continue
		}
		firstTool[t] = j
		switch {
		case t == "":
			v.errorf(tp, "%stools[%d]: empty tool name", pre, j)
		case v.tools.unknown(t):
			more := ""
			if len(a.Extensions) > 0 {
				more = "; an extension's own tools need no listing: the agent is offered them with the extension"
			}
			v.errorf(tp, "%sunknown tool %q%s%s", pre, t, v.tools.hint(), more)
		}
	}

	firstExt := map[string]int{}
	for j := range a.Extensions {
		v.extension(a, path, j, pre, firstExt)
	}
}

func (v *validator) extension(a *Agent, agentPath string, j int, pre string, firstExt map[string]int) {
	e := &a.Extensions[j]
	path := agentPath + ".extensions[" + strconv.Itoa(j) + "]"
	name := e.Name
	if name == "" && e.Wasm != "" {
		name = strings.TrimSuffix(filepath.Base(e.Wasm), ".wasm")
	}
	if name == "" {
		v.errorf(path, `%sextensions[%d]: set "name" (a native extension) or "wasm" (a WebAssembly module)`, pre, j)
	} else {
		if e.Wasm == "" && v.extensions.unknown(name) {
			v.errorf(path+".name", "%sunknown extension %q%s", pre, name, v.extensions.hint())
		}
		if j0, dup := firstExt[name]; dup {
			at := path + ".name"
			if e.Wasm != "" && !v.inFile(at) {
				at = path + ".wasm" // the name comes from the file name
			}
			v.errorf(at, "%sduplicate extension %q (first at %s); give one of them another name",
				pre, name, v.firstAt(agentPath+".extensions["+strconv.Itoa(j0)+"]"))
		} else {
			firstExt[name] = j
		}
	}
	epre := pre + "extensions[" + strconv.Itoa(j) + "]: "
	if name != "" {
		epre = pre + fmt.Sprintf("extension %q: ", name)
	}
	switch e.OnError {
	case "", onErrorFailClosed, onErrorFailOpen:
	default:
		v.errorf(path+".on_error", "%son_error must be %s or %s, got %q", epre, onErrorFailClosed, onErrorFailOpen, e.OnError)
	}
	if len(e.Agents) > 0 && e.Wasm == "" {
		v.errorf(path+".agents", "%sagents: only a WebAssembly extension (wasm:) is granted agents; a native one calls any through its contexts", epre)
	}
	if len(e.Pending) > 0 && e.Wasm == "" {
		v.errorf(path+".pending", "%spending: only a WebAssembly extension (wasm:) is granted pending kinds; a native one registers its own", epre)
	}
	for k, kind := range e.Pending {
		if !validKind(kind) {
			v.errorf(path+".pending["+strconv.Itoa(k)+"]", "%spending: %q is not a pending kind (1 to 64 lower-case letters, digits, _ or -)", epre, kind)
		}
	}
	v.extensionFiles(e, path, epre)
	v.httpGrants(e, path, epre)
	if e.Clock && e.Wasm == "" {
		v.errorf(path+".clock", "%sclock: only a WebAssembly extension (wasm:) is granted a clock; a native one has Go's", epre)
	}
	if l := e.Limits; l != nil {
		if e.Wasm == "" {
			v.errorf(path+".limits", "%slimits: only a WebAssembly extension (wasm:) has limits", epre)
		} else {
			if _, err := l.TimeoutDuration(); err != nil {
				v.errorf(path+".limits.timeout", "%slimits: %v", epre, err)
			}
			if _, err := ParseSize("memory", l.Memory); err != nil {
				v.errorf(path+".limits.memory", "%slimits: %v", epre, err)
			}
			if _, err := ParseSize("max_payload", l.MaxPayload); err != nil {
				v.errorf(path+".limits.max_payload", "%slimits: %v", epre, err)
			}
			if l.MaxDepth < 0 {
				v.errorf(path+".limits.max_depth", "%slimits: max_depth must be positive, got %d", epre, l.MaxDepth)
			}
			if l.MaxInstances < 0 {
				v.errorf(path+".limits.max_instances", "%slimits: max_instances must be positive, got %d", epre, l.MaxInstances)
			}
		}
	}
	for k, s := range e.Secrets {
		if store.ValidateEnvName("secret", s) != nil {
			v.errorf(path+".secrets["+strconv.Itoa(k)+"]", "%ssecrets: %q is not an environment variable name (1 to 64 letters, digits and _, not starting with a digit)", epre, s)
		}
	}
}

// inFile reports whether the file has a node at path.
func (v *validator) inFile(path string) bool {
	return v.f.src != nil && find(v.f.src.ast, path) != nil
}

func (v *validator) model(m *Model, path, pre string) {
	switch {
	case m.Provider == "":
		v.errorf(path+".provider", "%sprovider is required%s", pre, v.providers.hint())
	case v.providers.unknown(m.Provider) && v.importOf(m.Provider) != "":
		v.errorf(path+".provider", "%sprovider %q is not linked into this program; add: import _ %q", pre, m.Provider, v.importOf(m.Provider))
	case v.providers.unknown(m.Provider):
		v.errorf(path+".provider", "%sunknown provider %q%s", pre, m.Provider, v.providers.hint())
	case m.Provider == ScriptedProvider && m.Script == "":
		v.errorf(path+".provider", `%sthe scripted provider needs "script", the file of its responses`, pre)
	}
	if m.ContextWindow < 0 {
		v.errorf(path+".context_window", "%scontext_window must not be negative, got %d", pre, m.ContextWindow)
	}
	if m.MaxOutputTokens < 0 {
		v.errorf(path+".max_output_tokens", "%smax_output_tokens must not be negative, got %d", pre, m.MaxOutputTokens)
	}
	switch m.ToolProtocol {
	case "", toolProtocolNative, ToolProtocolXML:
	default:
		v.errorf(path+".tool_protocol", "%stool_protocol must be %s or %s, got %q", pre, toolProtocolNative, ToolProtocolXML, m.ToolProtocol)
	}
	if m.MaxRetries != nil && (*m.MaxRetries < 0 || *m.MaxRetries > maxRetriesLimit) {
		v.errorf(path+".max_retries", "%smax_retries must be between 0 and %d, got %d", pre, maxRetriesLimit, *m.MaxRetries)
	}
	if m.Thinking < 0 {
		v.errorf(path+".thinking", "%sthinking must not be negative, got %d", pre, m.Thinking)
	}
	if m.APIKeyEnv != "" && store.ValidateEnvName("api_key_env", m.APIKeyEnv) != nil {
		// It may be a key pasted in by mistake: neither the message nor
		// an excerpt of the line repeats it.
		v.errorf(path+".api_key_env", "%sapi_key_env must name an environment variable (1 to 64 letters, digits and '_', not starting with a digit); "+
			"this value is not one, and may be a key itself: put the key in a variable, never in the config", pre)
		v.maybeKeys = append(v.maybeKeys, m.APIKeyEnv)
	}
}

// maxRetriesLimit is the largest max_retries [File.Validate] accepts.
const maxRetriesLimit = 20

// TimeoutDuration parses Timeout; "" is 0 (the default).
func (l *Limits) TimeoutDuration() (time.Duration, error) {
	if l == nil || l.Timeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(l.Timeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout must be a positive duration such as 1s or 250ms, got %q", l.Timeout)
	}
	return d, nil
}

// ParseSize parses a size in bytes ("64MiB", "1 MB"), 1 to 4GiB; "" is
// 0, the default. Its error names field.
func ParseSize(field, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n == 0 || n > 1<<32 {
		return 0, fmt.Errorf("%s must be a size such as 64MiB (at most 4GiB), got %q", field, s)
	}
	return int(n), nil
}

// validKind reports whether k is a pending kind's name: 1 to 64 lower-case
// letters, digits, '_' or '-', as the WebAssembly host checks a guest's.
func validKind(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
