package config

import (
	"github.com/goccy/go-yaml/ast"
)

// File is a ganglion.yaml. [Load] resolves its relative paths against the
// file's directory. Reading a File from several goroutines is safe,
// changing it while others read it is not. Each field is a key of the file
// (REFERENCE.md); a nil pointer takes the defaults.
type File struct {
	// Path is the file Load read.
	Path string `yaml:"-"`
	// Workspace confines the built-in tools; default "workspace".
	Workspace string `yaml:"workspace"`
	// Data is badger's directory; default ".ganglion/data".
	Data string `yaml:"data"`
	// Store sizes the badger store in Data.
	Store *Store `yaml:"store"`
	// Model is the model of agents that name none.
	Model *Model `yaml:"model"`
	// Agents: at least one; the first is the CLI's default.
	Agents []Agent `yaml:"agents"`
	// Teams group agents, each in at most one team.
	Teams []Team `yaml:"teams"`
	// Outputs keeps long delegation reports; default "outputs".
	Outputs string `yaml:"outputs"`
	// AgentCalls bounds the calls between agents.
	AgentCalls *AgentCalls `yaml:"agent_calls"`
	// TaskBudget bounds task trees where an agent's leaves 0.
	TaskBudget *Budget `yaml:"task_budget"`
	// Webhooks are notified while `ganglion serve` runs.
	Webhooks []Webhook `yaml:"webhooks"`
	// Telemetry: nil is off, unless OTEL_EXPORTER_OTLP_*ENDPOINT is set.
	Telemetry *Telemetry `yaml:"telemetry"`
	// MCPServers are those agents' mcp_servers may name.
	MCPServers []MCPServer `yaml:"mcp_servers"`
	// Cluster: nil is one process, its data in badger.
	Cluster *Cluster `yaml:"cluster"`

	src *source // the text the file was parsed from, to position errors; nil if built in code
}

// Model selects a model provider and its settings.
type Model struct {
	// Provider is required: [ScriptedProvider], openai, anthropic, or
	// one the program registers.
	Provider string `yaml:"provider"`
	// Name is the provider's name of the model.
	Name string `yaml:"name"`
	// Script is required by [ScriptedProvider].
	Script string `yaml:"script"`
	// BaseURL is a networked provider's API endpoint.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the variable holding the API key, never the key.
	APIKeyEnv string `yaml:"api_key_env"`
	// ContextWindow is in tokens; 0: the provider's default.
	ContextWindow int `yaml:"context_window"`
	// MaxOutputTokens bounds an answer; 0: the provider's default.
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// ToolProtocol is "native" (default) or [ToolProtocolXML].
	ToolProtocol string `yaml:"tool_protocol"`
	// MaxRetries bounds retries on rate limits and server or network
	// errors: nil is 5, 0 none.
	MaxRetries *int `yaml:"max_retries"`
	// Thinking is Anthropic's thinking budget in tokens; 0: off.
	Thinking int `yaml:"thinking"`
}

// ToolProtocolXML has the model write tool calls as XML in its text.
const (
	toolProtocolNative = "native"
	ToolProtocolXML    = "xml"
)

// Webhook is a URL that receives notifications.
type Webhook struct {
	// URL is required: http or https.
	URL string `yaml:"url"`
	// SecretEnv names the variable holding the signing secret; required.
	SecretEnv string `yaml:"secret_env"`
	// Events are the notification types wanted; default all.
	Events []string `yaml:"events"`
}

// Agent defines one agent.
type Agent struct {
	// Name: [a-zA-Z0-9_.-]{1,64}, unique in the file.
	Name string `yaml:"name"`
	// Description says what it is for.
	Description string `yaml:"description"`
	// System is the system prompt.
	System string `yaml:"system"`
	// Model replaces the file's; Load sets nil to the file's pointer.
	Model *Model `yaml:"model"`
	// Tools names the tools the agent may call, each once.
	Tools []string `yaml:"tools"`
	// Extensions are loaded, and nest, in this order.
	Extensions []Extension `yaml:"extensions"`
	// MaxSteps: 1 to 1000; Load sets 0 to [DefaultMaxSteps].
	MaxSteps int `yaml:"max_steps"`
	// TaskBudget: fields left 0 come from the file's, then the defaults.
	TaskBudget *Budget `yaml:"task_budget"`
	// MCPServers offer their tools, named <server>__<tool>.
	MCPServers []AgentMCP `yaml:"mcp_servers"`
}

// Team is a named group of agents.
type Team struct {
	// Name: [a-zA-Z0-9_.-]{1,64}, unique in the file.
	Name string `yaml:"name" json:"name"`
	// Description says what it is for.
	Description string `yaml:"description" json:"description,omitempty"`
	// Agents are its members; at least one.
	Agents []string `yaml:"agents" json:"agents"`
}

// Extension is one extension an agent loads: native by Name alone, else
// the WebAssembly module Wasm, named Name if given, else after its file.
type Extension struct {
	// Name is unique in the agent; Load names a module after its file.
	Name string `yaml:"name"`
	// Wasm is a WebAssembly module's path.
	Wasm string `yaml:"wasm"`
	// OnError is fail_closed (Load's default) or fail_open.
	OnError string `yaml:"on_error"`
	// Priority orders middleware; lower runs outer. Default 0.
	Priority int `yaml:"priority"`
	// Secrets names the provided secrets it may read.
	Secrets []string `yaml:"secrets"`
	// Limits, Clock and Agents are only for Wasm.
	Limits *Limits `yaml:"limits"`
	// Clock grants the real clock; default a fake one.
	Clock bool `yaml:"clock"`
	// Agents names the agents it may call.
	Agents []string `yaml:"agents"`
	// Pending names the kinds of pending item it may open; only for Wasm.
	Pending []string `yaml:"pending"`
	// Files grants paths of the workspace to read and write.
	Files ExtensionFiles `yaml:"files"`
	// HTTP grants the origins it may call.
	HTTP []HTTPGrant `yaml:"http"`
	// Config is its own settings ([Extension.Decode]); nil if none.
	Config ast.Node `yaml:"config"`

	src   *source // the config file, to position Decode's errors
	dir   string  // the config file's directory
	path  string  // YAML path of this entry, "$.agents[0].extensions[1]"
	agent string  // name of the agent that loads it
}

// ExtensionFiles are paths of the workspace granted to a WASM extension:
// relative to the workspace, clean, without ".."; a directory grants what
// is under it, "." the whole workspace.
type ExtensionFiles struct {
	// Read are the paths it may read.
	Read []string `yaml:"read"`
	// Write are the paths it may write, and read.
	Write []string `yaml:"write"`
}

// Limits bound a WASM extension; zero takes the default.
type Limits struct {
	// Timeout bounds a hook call's guest time: a duration; default 2s.
	Timeout string `yaml:"timeout"`
	// Memory caps an instance's memory: a size; default 64MiB.
	Memory string `yaml:"memory"`
	// MaxPayload caps a value passed through the ABI; default 1MiB.
	MaxPayload string `yaml:"max_payload"`
	// MaxDepth caps next's re-entry into an instance; default 64.
	MaxDepth int `yaml:"max_depth"`
	// MaxInstances caps instances running hooks at once; default 16.
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
	// ToolCallTeamAgent delegates into a team; only for agents in none.
	ToolCallTeamAgent = "call_team_agent"
	// ScriptedProvider is the offline provider that replays Script.
	ScriptedProvider = "scripted"
	// onErrorFailClosed makes an extension's failure fail the turn.
	onErrorFailClosed = "fail_closed"
	// onErrorFailOpen makes an extension's failure skip the extension.
	onErrorFailOpen = "fail_open"
)

// Telemetry exports traces and metrics over OTLP, as the
// OTEL_EXPORTER_OTLP_* variables say (default http/protobuf to
// localhost:4318).
type Telemetry struct {
	// Traces: nil is true.
	Traces *bool `yaml:"traces"`
	// Metrics: nil is true.
	Metrics *bool `yaml:"metrics"`
	// Content puts messages and tool calls in spans (default false);
	// never secrets.
	Content bool `yaml:"content"`
	// ServiceName: default $OTEL_SERVICE_NAME, else "ganglion".
	ServiceName string `yaml:"service_name"`
}

// MCPServer is an MCP server: a stdio Command, or a streamable-HTTP URL.
type MCPServer struct {
	// Name: 1 to 32 letters, digits, '_' or '-', without "__".
	Name string `yaml:"name"`
	// Command runs in the config file's directory.
	Command []string `yaml:"command"`
	// Env values may be ${VAR} or ${secret:NAME}; a secret's must. A server
	// that takes a provided secret runs per instance, once it has it.
	Env map[string]string `yaml:"env"`
	// URL is a streamable-HTTP endpoint.
	URL string `yaml:"url"`
	// Headers are sent to URL; values as in Env.
	Headers map[string]string `yaml:"headers"`
	// Start is "lazy" (default) or "eager".
	Start string `yaml:"start"`
	// Timeout bounds a tool call: a duration; default 60s.
	Timeout string `yaml:"timeout"`
}

// AgentMCP is an MCP server an agent takes tools from; the server's name
// alone is short for {server: name}.
type AgentMCP struct {
	// Server names one of the file's mcp_servers; required.
	Server string `yaml:"server"`
	// Tools are those offered; empty: all.
	Tools []string `yaml:"tools"`
}
