package tape

import (
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tape records a session or replays one. It is called from every turn,
// so it must be safe for concurrent use.
type Tape interface {
	// Provider returns the provider to call for the model label names
	// ("" for an agent's own model, "extension.key" for a model an
	// extension opened); open opens the real one. A player does not call
	// open: a replay makes no model calls, and needs no API key.
	Provider(label string, open func() (model.Provider, error)) (model.Provider, error)
	// Clock returns the clock to read in place of now.
	Clock(now func() time.Time) func() time.Time
	// ID returns the ID to use for what key names (a task of a turn's
	// tool call, a pending item of a turn), in place of fresh().
	ID(key string, fresh func() string) string
	// ToolRunner's Tool runs one tool call: it calls c.Run, or, replaying
	// a tool that acts on the world, answers from the cassette. The turn
	// loop calls it through that seam of the engine.
	engine.ToolRunner
	// Input records what the session is given.
	Input(in Input)
	// Event records an event the session published.
	Event(ev events.Event)
	// MCPTools returns the tool listing of MCP server name, as JSON: list
	// lists it from the server, which a player does not call.
	MCPTools(name string, list func() ([]byte, error)) ([]byte, error)
}

// Call is a tool call a [Tape] runs: what the turn loop hands its tool
// runner. Live marks a tool that is code under test, which runs on
// replay too.
type Call = engine.ToolRun

// Input is cassette.Input, field for field (see there).
type Input struct {
	Op       string               `json:"op"`
	Agent    string               `json:"agent,omitempty"`
	Instance string               `json:"instance,omitempty"`
	Input    *pipeline.InputEvent `json:"input,omitempty"`
	ID       string               `json:"id,omitempty"`
	Text     string               `json:"text,omitempty"`
	Secret   bool                 `json:"secret,omitempty"`
}

// Open returns the Tape a cassette.Tape is, or nil. Package cassette sets
// it when it is initialised, which is before any runtime can be given a
// cassette.Tape.
var Open func(t any) Tape
