package shell

// The limits of Parse, for the external tests.
const (
	MaxBytes    = maxBytes
	MaxCommands = maxCommands
	MaxDepth    = maxDepth
)
