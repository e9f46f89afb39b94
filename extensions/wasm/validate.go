package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Validation.
//
// The host validates a module as written before it meters it: metering
// appends a global (the fuel counter), so a module that names a global it
// does not declare would, once metered, name the fuel counter and be valid.
// Compiling the metered module validates only the metered module.
//
// wazero has no validation call of its own; its CompileModule decodes and
// validates a module, then compiles it to native code, which costs ten to
// twenty times more and would be thrown away. So validate asks wazero for
// function listeners, which it builds after validating and before
// compiling, and the listener factory stops the compilation there.
// TestValidate checks that an invalid module is still refused, so that a
// wazero that changed that order would be noticed.
//
// A module's validity depends on its bytes only, so the engine remembers
// the modules it validated (by SHA-256), in memory and, with a cache
// directory, in the directory: a second start of the process validates
// nothing, as it compiles nothing. The directory is trusted as much as
// the compiled code wazero keeps beside it.

// errValidated stops CompileModule once the module is validated.
var errValidated = errors.New("validated")

// stopAfterValidation panics with errValidated when wazero asks for the
// first function's listener, which it does after validating the module and
// before compiling it.
var stopAfterValidation = experimental.FunctionListenerFactoryFunc(func(api.FunctionDefinition) experimental.FunctionListener {
	panic(errValidated)
})

// validate returns an error describing why code is not a valid module
// for rt, or nil. A panic of wazero's validator (found by FuzzMeter on
// malformed modules) is an invalid module too.
func validate(ctx context.Context, rt wazero.Runtime, code []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p == errValidated {
				err = nil
				return
			}
			err = fmt.Errorf("the validator failed: %v", p)
		}
	}()
	m, err := rt.CompileModule(experimental.WithFunctionListenerFactory(ctx, stopAfterValidation), code)
	if err != nil {
		return err
	}
	// A module without functions gets no listener: it was compiled, which
	// costs nothing.
	return m.Close(ctx)
}

// validate is the package's validate, remembered per module. It runs in
// the engine's own runtime, with no memory limit: whether a module's
// memory fits the extension's limit is for the compilation of the metered
// module to say, which is not remembered.
func (e *Engine) validate(ctx context.Context, code []byte) error {
	// Before anything decodes the module, and not remembered: the bounds
	// are the host's, and a later host may draw them otherwise.
	if err := checkBounds(code); err != nil {
		return fmt.Errorf("invalid module: %w", err)
	}
	sum := sha256.Sum256(code)
	if _, ok := e.valid.Load(sum); ok {
		return nil
	}
	var mark string
	if e.cacheDir != "" {
		mark = filepath.Join(e.cacheDir, "ganglion-validated", hex.EncodeToString(sum[:]))
		if _, err := os.Stat(mark); err == nil {
			e.valid.Store(sum, true)
			return nil
		}
	}
	if err := validate(ctx, e.validator, code); err != nil {
		return fmt.Errorf("invalid module: %w", err)
	}
	e.valid.Store(sum, true)
	if mark != "" {
		// A mark that cannot be written costs the next start a validation.
		if err := os.MkdirAll(filepath.Dir(mark), 0o700); err == nil {
			_ = os.WriteFile(mark, nil, 0o600)
		}
	}
	return nil
}
