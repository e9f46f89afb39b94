package seam

import (
	"context"
	"log/slog"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
)

// Instance is what a feature sees of an agent's instance during one of
// its steps, whose slot the caller holds.
type Instance interface {
	// Agent and Key name the instance.
	Agent() string
	Key() string
	// Secrets returns the secrets provided to the instance, read from the
	// store at their first use after the instance was loaded. The map is
	// the instance's own: read it, never change it.
	Secrets(ctx context.Context) (map[string]string, error)
	// Redact masks the instance's secrets in s.
	Redact(s string) string
}

// Env is what the runtime gives a feature's constructor.
type Env struct {
	// Config is the runtime's config, validated.
	Config *config.File
	// Logger is the runtime's logger.
	Logger *slog.Logger
	// Tape records or replays the session; nil when neither.
	Tape tape.Tape
}

// A ToolSource offers agents tools of its own besides theirs, listed
// anew at each step: MCP servers.
type ToolSource interface {
	// ForAgent returns what the source offers the steps of agent's
	// instances, or nil if it offers the agent nothing (an agent without
	// a source costs its steps nothing).
	ForAgent(agent config.Agent) StepTools
	// Evicted says that instance in left the runtime's memory: the
	// source releases what it kept for it. The caller holds the
	// instance's slot.
	Evicted(in Instance)
	// Close releases the source, after the last step.
	Close() error
}

// StepTools returns the tools a step of instance in is offered. It
// returns what it can: a tool that cannot be listed now is logged, not an
// error of the step.
type StepTools func(ctx context.Context, in Instance) []pipeline.Tool

// MCP builds the tool source of the config's MCP servers (config.File's
// MCPServers); package runtime/mcp sets it. Nil: the program did not
// link MCP.
var MCP func(ctx context.Context, env Env) (ToolSource, error)

// MCPImport is the import that links MCP into a program.
const MCPImport = "github.com/ganglion-dev/ganglion/runtime/mcp"
