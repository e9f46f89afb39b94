package wasm

import (
	"bytes"
	"context"
	"os"
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

// TestMeter: every test module that imports manifest is metered into a
// module wazero compiles, with one global more and checks in its code.
func TestMeter(t *testing.T) {
	for name, code := range testModules(t) {
		t.Run(name, func(t *testing.T) {
			out, err := meter(code)
			if err != nil {
				if strings.Contains(err.Error(), "does not import ganglion.manifest") {
					return // refuse_* modules without it
				}
				t.Fatal(err)
			}
			if err := compiles(code); err != nil {
				return // a module made not to compile stays so
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

// FuzzMeter: meter never panics, and what wazero compiles before metering
// it compiles after.
func FuzzMeter(f *testing.F) {
	for _, code := range testModules(f) {
		f.Add(code)
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		out, err := meter(code)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(out, []byte("\x00asm\x01\x00\x00\x00")) {
			t.Fatalf("metered output lost the header")
		}
		if compiles(code) == nil {
			if err := compiles(out); err != nil {
				t.Fatalf("compiles before metering, not after: %v", err)
			}
		}
	})
}
