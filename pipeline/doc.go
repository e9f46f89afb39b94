// Package pipeline defines Ganglion's three middleware kinds — turn, step and
// toolCall — their contexts and results, and the onion chain that composes
// them. It imports nothing else from Ganglion: the runtime supplies the
// innermost handlers ([Handlers]) and the conversation ([Conversation]);
// extensions, native or WebAssembly, supply the layers.
//
// A turn handles one input event and is a loop of steps; a step is one model
// call plus the tool calls it asks for; a toolCall is one tool execution. The
// nesting is drawn on [Pipeline].
//
// Middleware reads what it needs through methods on its context (the input,
// one message, the tool call) instead of receiving a copy of the whole
// conversation, so the cost of a layer does not grow with the conversation.
// Running a chain allocates nothing: the per-call state lives in the context.
package pipeline
