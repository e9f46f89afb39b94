// Package yamlsrc holds what every YAML reader of Ganglion shares: the
// limits a file must keep before it is parsed ([Check], [ReadFile], at most
// 1 MiB and 100 levels of nesting); the rendering of where in a file an
// error is: the lines around it, numbered, with a caret under the column
// ([Snippet]); and where each character of a scalar's value is in the file,
// whatever the scalar's style ([ScalarPositions]). The config loader, the
// scripted model's loader and the approval rules loader all use it, so
// every positioned error Ganglion prints looks the same and no reader
// parses a file the others would refuse.
package yamlsrc
