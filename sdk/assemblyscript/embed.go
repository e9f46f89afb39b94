//go:build !wasip1

// Package assemblyscript holds the sources of the AssemblyScript guest SDK,
// the npm package of this directory, for the ganglion command: "ganglion ext
// init --lang assemblyscript" writes them into the guest it scaffolds, so
// that the guest installs the SDK from its own directory, offline, with the
// SDK of the host that loads it. An AssemblyScript guest does not use this
// package.
package assemblyscript

import "embed"

// SourceFiles holds the package as it was when the ganglion command was
// built: package.json, asconfig.json, README.md and assembly/, at their
// paths in the package.
//
//go:embed package.json asconfig.json README.md assembly/*.ts assembly/tsconfig.json
var SourceFiles embed.FS
