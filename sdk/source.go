//go:build !wasip1

package ganglion

import "embed"

// SourceFiles holds this package's own files, as it was compiled: its Go
// sources (the _test.go files too) and ABI.md, at the root of the file
// system. The ganglion command copies the non-test ones into the guest
// module that "ganglion ext init" writes, so that the guest builds with
// the SDK of the host that will load it, offline, without fetching this
// module.
//
// It exists only outside a wasip1 guest: a guest neither needs nor
// carries the SDK's source, and its .wasm is the same with or without
// this file.
//
//go:embed *.go ABI.md
var SourceFiles embed.FS
