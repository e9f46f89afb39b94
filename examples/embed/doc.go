// Command embed shows how an app embeds Ganglion: it builds a runtime from a
// config written in code, registers a native extension and a custom tool,
// runs two turns and prints what happened.
//
//	go run ./examples/embed
//
// It runs offline: the model is the scripted model, with its script inline.
package main
