// Package quickstart is the README's quick start: ganglion.yaml, the
// scripted model's script.yaml and a workspace with notes.txt. Its test runs
// the quick start command exactly as the README writes it.
package quickstart
