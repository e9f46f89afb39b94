// Package config reads ganglion.yaml, the file that defines an app's agents,
// their models, tools and extensions, and checks it, reporting every problem
// with its file, line and column.
//
// The runtime and the CLI use it in three steps:
//
//  1. [Load] (or [Parse] for bytes) decodes the file strictly into a [File],
//     resolves relative paths and applies defaults;
//  2. [File.Validate] checks what decoding cannot: names, limits, required
//     settings, duplicates, and the tools, extensions and model providers
//     the runtime knows, given as [Known];
//  3. each extension decodes its own settings with [Extension.Decode].
//
// The file's format, every key with its type, its default and what it
// does, is in REFERENCE.md beside this file, and in the JSON Schema
// schema/ganglion.schema.json at the module's root, which editors use to
// check a file as it is typed. Tests keep both in step with the types.
//
//	model: {provider: scripted, script: replies.yaml}
//	agents:
//	  - name: assistant
//	    tools: [read_file, list_files]
//	    extensions: [{name: audit}]
//
// # Errors
//
// Problems in a file are reported as an [ErrorList] of [*Error]s, sorted by
// position. Each renders as "file:line:column: message" followed by the
// lines around it and a caret under the column:
//
//	ganglion.yaml:7:7: agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)
//	   4 | agents:
//	   5 | - name: assistant
//	   6 |   tools:
//	>  7 |     - reed_file
//	             ^
//
// Decoding stops at syntax errors, but otherwise collects every type error
// and unknown key; Validate collects every problem it finds.
//
// # Concurrency
//
// Load and Parse are safe for concurrent use. A [File] is
// plain data: many goroutines may read it, Validate it and Decode its
// extensions' configs at once, as long as none changes it.
package config
