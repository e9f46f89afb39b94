// Package yamlsrc renders where in a YAML file an error is: the lines around
// it, numbered, with a caret under the column. The config loader and the
// scripted model's loader share it, so every positioned error Ganglion
// prints looks the same.
package yamlsrc
