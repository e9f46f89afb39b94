// Package pipeline defines the three middleware kinds (turn, step and
// toolCall), their contexts and results, and the onion chain that composes
// them: the runtime supplies the innermost handlers and the conversation,
// extensions the layers. A turn handles one input and is a loop of steps;
// a step is one model call plus the tool calls it asks for. Running a chain
// allocates nothing. The reference (nesting, errors, metadata, the window):
// docs/extensions.md.
package pipeline
