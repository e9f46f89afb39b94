package runtime

import (
	"context"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// loadWasm loads a WebAssembly extension, starting the engine on first use.
// The engine's compilation cache lives in the data directory, so a second
// start of the process compiles nothing.
func (r *Runtime) loadWasm(ctx context.Context, ec config.Extension) (*wasm.Extension, error) {
	if r.wasm == nil {
		cache := ""
		if r.dataDir != "" {
			cache = filepath.Join(r.dataDir, "wasm-cache")
		}
		e, err := wasm.NewEngine(cache, r.logger)
		if err != nil {
			return nil, err
		}
		r.wasm = e
	}
	var l wasm.Limits
	if ec.Limits != nil {
		// Validate has checked them.
		l.Timeout, _ = ec.Limits.TimeoutDuration()
		l.MemoryLimit, _ = config.ParseSize("memory", ec.Limits.Memory)
		l.MaxPayload, _ = config.ParseSize("max_payload", ec.Limits.MaxPayload)
		l.MaxDepth, l.MaxInstances = ec.Limits.MaxDepth, ec.Limits.MaxInstances
	}
	return r.wasm.Load(ctx, ec.Name, ec.Wasm, l, wasm.Grants{Secrets: ec.Secrets})
}
