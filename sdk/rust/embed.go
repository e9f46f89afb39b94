//go:build !wasip1

// Package rust holds the sources of the Rust guest SDK, the crate ganglion
// of this directory, for the ganglion command: "ganglion ext init --lang
// rust" writes them into the guest it scaffolds, so that the guest builds
// offline with the SDK of the host that loads it. A Rust guest does not use
// this package.
package rust

import "embed"

// SourceFiles holds the crate as it was when the ganglion command was
// built: Cargo.toml, README.md and src/*.rs, at their paths in the crate.
//
//go:embed Cargo.toml README.md src/*.rs
var SourceFiles embed.FS
