package runtime

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// The turn engine (runtime/internal/engine) runs the turns; these are its
// types as the runtime's features name them, and the placement it asks.
type (
	instance   = engine.Instance
	turnState  = engine.Turn
	instanceID = engine.ID
)

// enginePlace is the runtime's placement as the engine asks it.
type enginePlace struct{ p seam.Placement }

func (e enginePlace) Fence(in *instance) uint64      { return e.p.Fence(in) }
func (e enginePlace) Failed(in *instance, err error) { e.p.Failed(in, err) }

// MetaInterrupted (true) marks the result of a tool call the process
// stopped during; the call is never run again.
const MetaInterrupted = engine.MetaInterrupted

// runTurn runs one turn of inst, whose turn slot the caller holds, if the
// agent loaded.
func (a *agent) runTurn(ctx context.Context, inst *instance, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	if err := a.available(); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, err
	}
	return a.RunTurn(ctx, inst, in)
}
