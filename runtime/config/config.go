package config

import (
	"github.com/goccy/go-yaml/ast"
)

// File is a ganglion.yaml: the agents of an app and where it keeps its data.
//
// Relative paths in the file are resolved against the file's directory by [Load].
type File struct {
	// Path is the file the config was read from (set by Load).
	Path string `yaml:"-"`
	// Workspace is the directory the built-in tools are confined to.
	// Default: "workspace" next to the config file.
	Workspace string `yaml:"workspace"`
	// Data is the directory badger keeps its files in. Empty: the caller's
	// default (the CLI's --data flag, ./.ganglion/data).
	Data string `yaml:"data"`
	// Model is the default model of every agent that names none.
	Model *Model `yaml:"model"`
	// Agents are the agents, in order; the first is the CLI's default.
	Agents []Agent `yaml:"agents"`
}

// Model selects a model provider and its settings.
type Model struct {
	// Provider is "scripted" (the offline default); later issues add real ones.
	Provider string `yaml:"provider"`
	// Name is the provider's model name.
	Name string `yaml:"name"`
	// Script is the scripted model's YAML file.
	Script string `yaml:"script"`
	// BaseURL is the API endpoint of a networked provider.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable that holds the API key. The
	// key itself never appears in a config file.
	APIKeyEnv string `yaml:"api_key_env"`
	// ContextWindow is the model's context size in tokens.
	ContextWindow int `yaml:"context_window"`
	// MaxOutputTokens bounds an answer.
	MaxOutputTokens int `yaml:"max_output_tokens"`
}

// Agent defines one agent.
type Agent struct {
	// Name identifies the agent: [a-zA-Z0-9_.-]{1,64}, unique in the file.
	Name string `yaml:"name"`
	// Description tells other agents and people what it is for.
	Description string `yaml:"description"`
	// System is the system prompt.
	System string `yaml:"system"`
	// Model overrides the file's default model.
	Model *Model `yaml:"model"`
	// Tools names the tools the agent may call: built-ins (read_file,
	// write_file, list_files, execute_command) or tools registered in code.
	Tools []string `yaml:"tools"`
	// Extensions are loaded in this order; their middleware nests in this
	// order unless a priority says otherwise.
	Extensions []Extension `yaml:"extensions"`
	// MaxSteps bounds the steps of a turn. Default 25.
	MaxSteps int `yaml:"max_steps"`
}

// Extension is one extension an agent loads.
type Extension struct {
	// Name is a native extension's registered name, or the name given to a
	// WASM module (default: the file name without .wasm).
	Name string `yaml:"name"`
	// Wasm is the path of a WebAssembly module (a later issue).
	Wasm string `yaml:"wasm"`
	// OnError is fail_closed (default) or fail_open.
	OnError string `yaml:"on_error"`
	// Priority orders the extension's middleware; lower runs outer. Default 0.
	Priority int `yaml:"priority"`
	// Config is the extension's own settings, decoded by the extension.
	Config ast.Node `yaml:"config"`
}

// DefaultMaxSteps is an agent's max_steps when the config gives none.
const DefaultMaxSteps = 25
