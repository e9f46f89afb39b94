package wasm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// compiles reports whether wazero compiles code (with the host's imports
// unresolved: compiling does not link).
func compiles(code []byte) error {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	_, err := compile(ctx, rt, code)
	return err
}

func testModules(t testing.TB) map[string][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	paths = append(paths, filepath.Join("..", "..", "examples", "extensions", "as-guard", "as-guard.wasm"))
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestMeter: every valid test module that imports manifest is metered
// into a module wazero compiles, with one global more and checks in its
// code; an invalid one is refused, or metered into a module that is still
// invalid.
func TestMeter(t *testing.T) {
	for name, code := range testModules(t) {
		t.Run(name, func(t *testing.T) {
			out, err := meter(code)
			valid := compiles(code) == nil
			switch {
			case err != nil && strings.Contains(err.Error(), "does not import ganglion.manifest"):
				return // refuse_* modules without it
			case err != nil && !valid:
				return
			case err != nil && strings.Contains(err.Error(), "declares no maximum"):
				return // refuse_tablegrow: valid, and refused by the host's bound on tables
			case err != nil:
				t.Fatal(err)
			case !valid:
				if compiles(out) == nil {
					t.Fatal("an invalid module is valid once metered")
				}
				return
			}
			if err := compiles(out); err != nil {
				t.Fatalf("the metered module does not compile: %v", err)
			}
			if len(out) <= len(code) {
				t.Errorf("metered %d bytes, from %d: no checks inserted", len(out), len(code))
			}
		})
	}
}

func TestMeterRefusals(t *testing.T) {
	guard, err := os.ReadFile(filepath.Join("testdata", "guard.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		code []byte
		want string
	}{
		{"empty", nil, "not a WebAssembly binary"},
		{"text", []byte("(module)"), "not a WebAssembly binary"},
		{"version 2", append([]byte("\x00asm\x02\x00\x00\x00"), guard[8:]...), "WebAssembly binary version [2 0 0 0], want 1"},
		{"no imports", []byte("\x00asm\x01\x00\x00\x00"), "does not import ganglion.manifest"},
		{"truncated", guard[:len(guard)-5], "past the end"},
		{"section too long", append(append([]byte{}, guard[:8]...), 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F), "past the end"},
		// Global 0 of a module without globals would be the fuel counter.
		{"writes an undeclared global", readTestdata(t, "refuse_fuel.wasm"), "code section: function 1: offset 16: global 0, but the module has 0 globals"},
		{"grows a table without a maximum", wat(t, `(module (import "ganglion" "manifest" (func (param i32 i32) (result i32)))
			(table 1 funcref) (table 1 2 funcref)
			(func (drop (table.grow 1 (ref.null func) (i32.const 1))) (drop (table.grow 0 (ref.null func) (i32.const 1)))))`),
			"code section: function 0: offset 13: table.grow on table 0, which declares no maximum"},
		{"exports an undeclared global", wat(t, `(module (import "ganglion" "manifest" (func (param i32 i32) (result i32))) (export "fuel" (global 0)))`),
			`export section: export "fuel": global 0, but the module has 0 globals`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := meter(tt.code)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("meter = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// FuzzMeter: checkBounds and meter never panic; of the modules within
// bounds (the host checks them first, see bounds.go; the others would
// have wazero allocate by counts the module does not hold, which stalled
// this fuzzer on its first find), validate refuses exactly what wazero
// does not compile; a valid module is metered into a valid one, and an
// invalid one is refused or stays invalid (metering never makes the
// guest's code valid, as an appended fuel counter could).
func FuzzMeter(f *testing.F) {
	for _, code := range testModules(f) {
		f.Add(code)
	}
	ctx := context.Background()
	validator := wazero.NewRuntime(ctx)
	f.Cleanup(func() { validator.Close(ctx) })
	f.Fuzz(func(t *testing.T, code []byte) {
		out, err := meter(code) // within bounds or not
		if checkBounds(code) != nil {
			return
		}
		verr := validate(ctx, validator, code)
		cerr := compiles(code)
		if (verr == nil) != (cerr == nil) {
			t.Fatalf("validate: %v; compile: %v", verr, cerr)
		}
		if err != nil {
			return
		}
		if !bytes.HasPrefix(out, []byte("\x00asm\x01\x00\x00\x00")) {
			t.Fatalf("metered output lost the header")
		}
		err = compiles(out)
		if verr == nil && err != nil {
			t.Fatalf("valid before metering, not after: %v", err)
		}
		if verr != nil && err == nil {
			t.Fatalf("invalid before metering (%v), valid after", verr)
		}
	})
}

// TestValidate: validate refuses what wazero does not compile, and
// accepts what it does, for every test module; with the cost of
// validating only (see validate.go).
func TestValidate(t *testing.T) {
	ctx := context.Background()
	validator := wazero.NewRuntime(ctx)
	defer validator.Close(ctx)
	for name, code := range testModules(t) {
		t.Run(name, func(t *testing.T) {
			verr, cerr := validate(ctx, validator, code), compiles(code)
			if (verr == nil) != (cerr == nil) {
				t.Fatalf("validate: %v; compile: %v", verr, cerr)
			}
		})
	}
	if err := validate(ctx, validator, readTestdata(t, "refuse_fuel.wasm")); err == nil || err.Error() != `invalid function[1] export["ganglion_init"]: invalid global index` {
		t.Errorf("validate(refuse_fuel.wasm) = %v", err)
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wat assembles a module with wat2wasm, skipping the test without it.
func wat(t testing.TB, text string) []byte {
	t.Helper()
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm (wabt) is not on PATH")
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bin, "--no-check", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMeterTableGrow: a table with a maximum may grow, and its growth
// takes fuel by its size like the other bulk operations.
func TestMeterTableGrow(t *testing.T) {
	code := wat(t, `(module (import "ganglion" "manifest" (func (param i32 i32) (result i32)))
		(table 1 100 funcref)
		(func (result i32) (table.grow 0 (ref.null func) (i32.const 10))))`)
	out, err := meter(code)
	if err != nil {
		t.Fatal(err)
	}
	if err := compiles(out); err != nil {
		t.Fatalf("the metered module does not compile: %v", err)
	}
	// The charge function is appended (type and functions): the module
	// grows by it, not only by the checks.
	sizeCode := wat(t, `(module (import "ganglion" "manifest" (func (param i32 i32) (result i32)))
		(table 1 100 funcref)
		(func (result i32) (table.size 0)))`)
	sized, err := meter(sizeCode)
	if err != nil {
		t.Fatal(err)
	}
	if grew, checked := len(out)-len(code), len(sized)-len(sizeCode); grew < checked+40 {
		t.Errorf("metering table.grow added %d bytes, table.size %d: no charge function appended", grew, checked)
	}
}
