package config

import (
	"github.com/goccy/go-yaml/ast"
)

// File is a ganglion.yaml: the agents of an app and where it keeps its data.
//
// Relative paths in the file are resolved against the file's directory by [Load].
//
// A File is plain data: reading it from several goroutines is safe, changing
// it while others read it is not.
type File struct {
	// Path is the file the config was read from (set by Load).
	Path string `yaml:"-"`
	// Workspace is the directory the built-in tools are confined to.
	// Default: "workspace" next to the config file.
	Workspace string `yaml:"workspace"`
	// Data is the directory badger keeps its files in. Default:
	// ".ganglion/data" next to the config file, so that the same config
	// has the same history from wherever it is run.
	Data string `yaml:"data"`
	// Store sizes the badger store in Data. Nil: Badger's defaults.
	Store *Store `yaml:"store"`
	// Model is the default model of every agent that names none.
	Model *Model `yaml:"model"`
	// Agents are the agents, in order; the first is the CLI's default.
	// A file needs at least one.
	Agents []Agent `yaml:"agents"`
	// Teams group agents. An agent belongs to at most
	// one team. A team's agents delegate among themselves (call_agent); an
	// agent in no team is system-level: it delegates to the other
	// system-level agents, and one way into a team with call_team_agent.
	Teams []Team `yaml:"teams"`
	// Outputs is the directory where a delegated task's response longer
	// than the report limit is saved, reported as the file's absolute path.
	// Default: "outputs" next to the config file.
	Outputs string `yaml:"outputs"`
	// AgentCalls bounds the calls between agents (ctx.agents requests and
	// delegation chains). Nil: the defaults.
	AgentCalls *AgentCalls `yaml:"agent_calls"`
	// TaskBudget bounds every delegation task tree, for the fields an
	// agent's own task_budget leaves 0. Nil: the defaults.
	TaskBudget *Budget `yaml:"task_budget"`
	// Webhooks receive notifications while `ganglion serve` runs: pending
	// items created and resolved, root tasks answered, turns failed.
	Webhooks []Webhook `yaml:"webhooks"`
	// Telemetry exports traces and metrics over OTLP. Nil: off, unless an
	// OTEL_EXPORTER_OTLP_*ENDPOINT environment variable is set.
	Telemetry *Telemetry `yaml:"telemetry"`
	// MCPServers are the MCP servers agents may take tools from (an
	// agent's mcp_servers names them).
	MCPServers []MCPServer `yaml:"mcp_servers"`
	// Cluster runs the config on several processes as one system, over
	// NATS JetStream. Nil: one process, its data in badger.
	Cluster *Cluster `yaml:"cluster"`

	src *source // the text the file was parsed from, to position errors; nil if built in code
}

// Model selects a model provider and its settings.
type Model struct {
	// Provider names the model provider; required. "scripted" (the
	// offline default, [ScriptedProvider]) replays Script; later issues add
	// real ones. [File.Validate] checks it against [Known].Provider.
	Provider string `yaml:"provider"`
	// Name is the provider's model name.
	Name string `yaml:"name"`
	// Script is the scripted model's YAML file; required by the scripted
	// provider. Relative to the config file's directory.
	Script string `yaml:"script"`
	// BaseURL is the API endpoint of a networked provider.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable that holds the API key. The
	// key itself never appears in a config file.
	APIKeyEnv string `yaml:"api_key_env"`
	// ContextWindow is the model's context size in tokens; 0: the
	// provider's default.
	ContextWindow int `yaml:"context_window"`
	// MaxOutputTokens bounds an answer; 0: the provider's default.
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// ToolProtocol is how the model calls tools: "native" (default), the
	// provider's tool calling, or "xml", tool calls written as
	// <tool_name><param>value</param></tool_name> in the text, for models
	// without native tool calling.
	ToolProtocol string `yaml:"tool_protocol"`
	// MaxRetries bounds the retries of a failed call (rate limit, server or
	// network error); absent: 5, 0: none.
	MaxRetries *int `yaml:"max_retries"`
	// Thinking is the token budget of Anthropic's extended thinking; 0
	// (default) leaves it off.
	Thinking int `yaml:"thinking"`
}

// The tool protocols of [Model.ToolProtocol]: native (the default, also
// written "") and ToolProtocolXML.
const (
	toolProtocolNative = "native"
	ToolProtocolXML    = "xml"
)

// Webhook is a URL that receives notifications (see package
// runtime/server, Webhook).
type Webhook struct {
	// URL is where notifications are posted: http or https; required.
	URL string `yaml:"url"`
	// SecretEnv names the environment variable holding the signing secret
	// ("whsec_..." or any text); required. The secret itself never goes in
	// the file.
	SecretEnv string `yaml:"secret_env"`
	// Events are the notification types the URL wants: pending.created,
	// pending.resolved, task.answered, turn.failed. Default: all four.
	Events []string `yaml:"events"`
}

// Agent defines one agent.
type Agent struct {
	// Name identifies the agent: [a-zA-Z0-9_.-]{1,64}, unique in the file.
	Name string `yaml:"name"`
	// Description tells other agents and people what it is for.
	Description string `yaml:"description"`
	// System is the system prompt.
	System string `yaml:"system"`
	// Model overrides the file's default model as a whole (its fields are
	// not merged with the default's). Load sets an agent without a model to
	// the file's Model: the same pointer, shared by all such agents.
	Model *Model `yaml:"model"`
	// Tools names the tools the agent may call: built-ins (read_file,
	// write_file, list_files, execute_command) or tools registered in code.
	// Each at most once.
	Tools []string `yaml:"tools"`
	// Extensions are loaded in this order; their middleware nests in this
	// order unless a priority says otherwise.
	Extensions []Extension `yaml:"extensions"`
	// MaxSteps bounds the steps of a turn: 1 to 1000. Load sets
	// 0 (absent) to [DefaultMaxSteps].
	MaxSteps int `yaml:"max_steps"`
	// TaskBudget bounds each delegation task tree the agent starts: the
	// request it delegated from, with every task delegated under it (see
	// [Budget]). Fields left 0 come from the file's task_budget, then the
	// defaults.
	TaskBudget *Budget `yaml:"task_budget"`
	// MCPServers are the MCP servers whose tools the agent is offered,
	// named <server>__<tool>: all of a server's, or those Tools lists.
	MCPServers []AgentMCP `yaml:"mcp_servers"`
}

// Team is a named group of agents.
type Team struct {
	// Name identifies the team: [a-zA-Z0-9_.-]{1,64}, unique in the file.
	Name string `yaml:"name" json:"name"`
	// Description tells system-level agents what the team is for.
	Description string `yaml:"description" json:"description,omitempty"`
	// Agents are the team's members, agents the file defines; at least one.
	Agents []string `yaml:"agents" json:"agents"`
}

// Extension is one extension an agent loads.
//
// Name alone loads a native extension registered under that name; Wasm
// loads a WebAssembly module, named Name if given (so that one module can be
// loaded twice under two names), else after its file.
type Extension struct {
	// Name is a native extension's registered name, or the name given to a
	// WASM module (default: the file name without .wasm, set by Load).
	// Unique among the agent's extensions.
	Name string `yaml:"name"`
	// Wasm is the path of a WebAssembly module (a later issue), relative to
	// the config file's directory.
	Wasm string `yaml:"wasm"`
	// OnError is fail_closed (default, set by Load) or fail_open: whether
	// an error or trap in the extension's middleware fails the turn or is
	// skipped.
	OnError string `yaml:"on_error"`
	// Priority orders the extension's middleware; lower runs outer. Default 0.
	Priority int `yaml:"priority"`
	// Secrets names the provided secrets (dependency values such as
	// OPENAI_API_KEY) the extension may read. Default: none.
	Secrets []string `yaml:"secrets"`
	// Limits bound a WASM extension's calls; only with wasm.
	Limits *Limits `yaml:"limits"`
	// Clock grants a WASM extension the real clock; without it the guest
	// sees a fake one. Only with wasm.
	Clock bool `yaml:"clock"`
	// Agents names the agents a WASM extension may call (its manifest
	// must list them too). Only with wasm.
	Agents []string `yaml:"agents"`
	// Config is the extension's own settings, decoded by the extension
	// with [Extension.Decode]. Nil when the file gives none.
	Config ast.Node `yaml:"config"`

	src   *source // the config file, to position Decode's errors
	dir   string  // the config file's directory
	path  string  // YAML path of this entry, "$.agents[0].extensions[1]"
	agent string  // name of the agent that loads it
}

// Limits bound a WASM extension. Zero values take the host's defaults.
type Limits struct {
	// Timeout bounds the guest time of one hook call, as a Go duration
	// ("1s", "250ms"). Default 2s.
	Timeout string `yaml:"timeout"`
	// Memory caps an instance's memory: bytes, or a size such as "64MiB".
	// Default 64MiB.
	Memory string `yaml:"memory"`
	// MaxPayload caps one value passed through the ABI: bytes or a size.
	// Default 1MiB.
	MaxPayload string `yaml:"max_payload"`
	// MaxDepth caps how deeply next may re-enter one instance. Default 64.
	MaxDepth int `yaml:"max_depth"`
	// MaxInstances caps the instances running hooks at once. Default 16.
	MaxInstances int `yaml:"max_instances"`
}

const (
	// DefaultMaxSteps is an agent's max_steps when the config gives none.
	DefaultMaxSteps = 25
	// maxStepsLimit is the largest max_steps [File.Validate] accepts.
	maxStepsLimit = 1000
	// defaultWorkspace is the workspace directory, relative to the config
	// file, when the config gives none.
	defaultWorkspace = "workspace"
	// defaultData is the data directory, relative to the config file.
	defaultData = ".ganglion/data"
	// defaultOutputs is the outputs directory, relative to the config file,
	// when the config gives none.
	defaultOutputs = "outputs"
	// ToolCallTeamAgent is the system tool that delegates into a team;
	// only agents in no team may list it.
	ToolCallTeamAgent = "call_team_agent"
	// ScriptedProvider is the offline model provider that replays a script;
	// a model with this provider needs Script.
	ScriptedProvider = "scripted"
	// onErrorFailClosed makes an extension's failure fail the turn.
	onErrorFailClosed = "fail_closed"
	// onErrorFailOpen makes an extension's failure skip the extension.
	onErrorFailOpen = "fail_open"
)

// Telemetry configures the OpenTelemetry traces and metrics a runtime
// exports over OTLP, to the endpoint, protocol and headers of the
// standard OTEL_EXPORTER_OTLP_* environment variables (default
// http/protobuf to localhost:4318).
type Telemetry struct {
	// Traces exports spans; default true.
	Traces *bool `yaml:"traces"`
	// Metrics exports metrics; default true.
	Metrics *bool `yaml:"metrics"`
	// Content puts message text, tool arguments and tool results into
	// spans. Default false: they can hold what users typed. Provided
	// secrets are never in them.
	Content bool `yaml:"content"`
	// ServiceName is the service.name of the exported data; default
	// $OTEL_SERVICE_NAME, else "ganglion".
	ServiceName string `yaml:"service_name"`
}

// MCPServer is an MCP server: a command that speaks MCP on its standard
// input and output, or a streamable-HTTP endpoint.
type MCPServer struct {
	// Name names the server in agents' mcp_servers and in its tools'
	// names (<name>__<tool>): 1 to 32 letters, digits, '_' or '-', without
	// "__".
	Name string `yaml:"name"`
	// Command is the program and its arguments, for a stdio server. It
	// runs in the config file's directory.
	Command []string `yaml:"command"`
	// Env is the command's environment, on top of a few variables programs
	// need (PATH, HOME, ...). Values may name an environment variable of
	// the runtime's process, as ${VAR}, or a secret provided to the
	// instance (a dependency request's answer), as ${secret:NAME}. A
	// variable whose name says it holds a secret (KEY, TOKEN, SECRET,
	// PASSWORD) must take its value from one: never in clear here.
	//
	// A server that takes a provided secret runs once per instance that
	// uses it, with that instance's secret, and restarts when the secret
	// is provided anew; until the instance has it, the server's tools are
	// not offered.
	Env map[string]string `yaml:"env"`
	// URL is the endpoint of a streamable-HTTP server.
	URL string `yaml:"url"`
	// Headers are sent with every request to URL; values may name an
	// environment variable as ${VAR} or a provided secret as
	// ${secret:NAME}, as in Env, and Authorization, or a header whose
	// name says it holds a secret, must.
	Headers map[string]string `yaml:"headers"`
	// Start is "lazy" (the default: at the first step of an agent that
	// uses it) or "eager" (when the runtime starts).
	Start string `yaml:"start"`
	// Timeout bounds each tool call, as a Go duration; default 60s.
	Timeout string `yaml:"timeout"`
}

// AgentMCP is an MCP server an agent takes tools from: all its tools, or
// those Tools names. In a file, an entry is a mapping ({server: calc,
// tools: [add]}) or, for all of a server's tools, the server's name alone
// (calc, the short form of {server: calc}).
type AgentMCP struct {
	// Server names one of the file's mcp_servers; required.
	Server string `yaml:"server"`
	// Tools are the server's tools the agent is offered; empty: all.
	Tools []string `yaml:"tools"`
}
