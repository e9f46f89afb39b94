package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// wasmHost loads the WebAssembly extensions into one engine, started by
// the first.
type wasmHost struct {
	engine *wasm.Engine
	// cacheDir holds compiled modules, so that a second start of the
	// process compiles nothing: WithWasmCache, else in the data directory.
	cacheDir string
}

// loadWasm loads a WebAssembly extension, starting the engine on first use.
func (r *Runtime) loadWasm(ctx context.Context, ec config.Extension) (*wasm.Extension, error) {
	if r.kit.wasm.engine == nil {
		e, err := wasm.NewEngine(r.kit.wasm.cacheDir, r.logger)
		if err != nil {
			return nil, err
		}
		r.kit.wasm.engine = e
	}
	var l wasm.Limits
	if ec.Limits != nil {
		// Validate has checked them.
		l.Timeout, _ = ec.Limits.TimeoutDuration()
		l.MemoryLimit, _ = config.ParseSize("memory", ec.Limits.Memory)
		l.MaxPayload, _ = config.ParseSize("max_payload", ec.Limits.MaxPayload)
		l.MaxDepth, l.MaxInstances = ec.Limits.MaxDepth, ec.Limits.MaxInstances
	}
	var settings any
	if err := ec.Decode(&settings); err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(jsonable(settings))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	grants := wasm.Grants{Secrets: ec.Secrets, Agents: ec.Agents, Pending: ec.Pending, Clock: ec.Clock, Config: cfg,
		Files: wasm.Files{Read: ec.Files.Read, Write: ec.Files.Write}}
	for _, g := range ec.HTTP {
		grants.HTTP = append(grants.HTTP, wasm.HTTPGrant{Origin: g.Origin, Methods: g.Methods})
	}
	x, err := r.kit.wasm.engine.Load(ctx, ec.Name, ec.Wasm, l, grants)
	var ie *wasm.InitError
	if errors.As(err, &ie) {
		if path, msg, ok := guestConfigError(ie.Err.Error()); ok {
			return nil, ec.ErrorAt(path, msg)
		}
	}
	return x, err
}

// guestConfigError finds, in a guest's init failure, a problem with its
// config: section, which the ABI spells "config: PATH: MESSAGE" with PATH
// a YAML path from "$" (the Go SDK's ConfigError). ok is false for any
// other failure.
func guestConfigError(text string) (path, msg string, ok bool) {
	i := strings.Index(text, "config: $")
	if i < 0 || i > 0 && text[i-1] != ' ' {
		return "", "", false
	}
	path, msg, ok = strings.Cut(text[i+len("config: "):], ": ")
	if !ok || msg == "" || strings.ContainsAny(path, " \n") && !strings.Contains(path, `"`) {
		return "", "", false
	}
	return path, msg, true
}

// jsonable turns what YAML decoded into values encoding/json accepts: maps
// with non-string keys get string keys.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
		return t
	}
	return v
}
