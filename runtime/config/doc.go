// Package config reads ganglion.yaml, the file that defines an app's agents,
// their models, tools and extensions, and checks it, reporting every problem
// with its file, line and column.
//
// [Load] (or [Parse] for bytes) decodes the file strictly into a [File],
// resolves relative paths and applies defaults; [File.Validate] checks what
// decoding cannot, against the names the runtime knows ([Known]); each
// extension decodes its own settings with [Extension.Decode]. Problems are
// an [ErrorList] sorted by position, each [Error] rendered with the lines
// around it and a caret under the column.
//
// Load and Parse are safe for concurrent use. A [File] is plain data: many
// goroutines may read, Validate and Decode it while none changes it.
//
// Every key, with its type and default: REFERENCE.md beside this file (and
// schema/ganglion.schema.json, for editors). The Go side in full:
// docs/embedding.md, "The config in Go".
package config
