package protocol

// KindPhaseComplete is the name of the block that reports the end of a phase
// of work.
const KindPhaseComplete = "PHASE_COMPLETE"

// PhaseComplete is the value of a PHASE_COMPLETE block:
//
//	[PHASE_COMPLETE]
//	phase: design
//	summary: The API is drafted and reviewed.
//	artifacts:
//	  - docs/api.md
//	  - docs/rationale.md
//	[/PHASE_COMPLETE]
type PhaseComplete struct {
	// Phase names the phase that ended.
	Phase string `json:"phase"`
	// Summary says what was done.
	Summary string `json:"summary"`
	// Artifacts lists what the phase produced (paths, URLs, names); may be
	// empty.
	Artifacts []string `json:"artifacts,omitempty"`
}

var phaseKind = Kind{
	Name: KindPhaseComplete,
	Fields: []FieldSpec{
		{Name: "phase", Type: TextField, Required: true},
		{Name: "summary", Type: TextField, Required: true},
		{Name: "artifacts", Type: ListField},
	},
	Build: func(f *Fields) (any, error) {
		return &PhaseComplete{Phase: f.Text("phase"), Summary: f.Text("summary"), Artifacts: f.List("artifacts")}, nil
	},
}
