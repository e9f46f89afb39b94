package wasm_test

import (
	"context"
	goruntime "runtime"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

// Raw module builders, for modules no assembler writes: a count or a
// length the bytes after it do not hold.

func leb(v uint32) []byte { return wasm.AppendU32(nil, v) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func section(id byte, body ...[]byte) []byte {
	b := cat(body...)
	return cat([]byte{id}, leb(uint32(len(b))), b)
}

func module(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// manifestImport is the import every guest has: (import "ganglion"
// "manifest" (func (type 0))), with type 0 (func (param i32 i32) (result i32)).
var (
	manifestType   = section(1, leb(1), []byte{0x60, 2, 0x7F, 0x7F, 1, 0x7F})
	manifestImport = section(2, leb(1), leb(8), []byte("ganglion"), leb(8), []byte("manifest"), []byte{0x00}, leb(0))
)

// huge is a count or a length of about 134 million: as a vector's length,
// a few gigabytes of host memory for a decoder that believes it.
const huge = 1<<27 - 1

// TestDecodeBombs: a module of a few dozen bytes whose counts or lengths
// claim more than its bytes hold is refused before it costs the host more
// than a few megabytes or any noticeable time. A decoder that sizes its
// vectors by the count it reads would allocate gigabytes (FuzzMeter found
// the first: an export count of 221 million took 9 s and several GB to
// refuse).
func TestDecodeBombs(t *testing.T) {
	body := func(locals ...[]byte) []byte { // one function body: locals, then end
		b := cat(leb(uint32(len(locals))), cat(locals...), []byte{0x0B})
		return cat(leb(uint32(len(b))), b)
	}
	tests := []struct {
		name string
		code []byte
		want string // the error after "wasm bomb.wasm: "
	}{
		{"type count", module(section(1, leb(huge))),
			"type section: 134217727 types, but only 0 bytes follow"},
		{"parameter count", module(section(1, leb(1), []byte{0x60}, leb(huge), []byte{0x7F})),
			"type section: type 0: 134217727 parameters, but only 1 byte follows"},
		{"import count", module(manifestType, section(2, leb(huge), []byte{0, 0})),
			"import section: 134217727 imports, but only 2 bytes follow"},
		{"import name length", module(manifestType, section(2, leb(1), leb(huge), []byte("ganglion"))),
			"import section: import 0: a name of 134217727 bytes, but only 8 bytes follow"},
		{"function count", module(manifestType, manifestImport, section(3, leb(huge), []byte{0})),
			"function section: 134217727 functions, but only 1 byte follows"},
		{"table count", module(manifestType, manifestImport, section(4, leb(huge))),
			"table section: 134217727 tables, but only 0 bytes follow"},
		{"memory count", module(manifestType, manifestImport, section(5, leb(huge))),
			"memory section: 134217727 memories, but only 0 bytes follow"},
		{"global count", module(manifestType, manifestImport, section(6, leb(huge))),
			"global section: 134217727 globals, but only 0 bytes follow"},
		{"export count", module(manifestType, manifestImport, section(7, leb(huge), []byte{1, 'a', 0})),
			"export section: 134217727 exports, but only 3 bytes follow"},
		{"export name length", module(manifestType, manifestImport, section(7, leb(1), leb(huge), []byte{'a', 0, 0})),
			"export section: export 0: a name of 134217727 bytes, but only 3 bytes follow"},
		{"element count", module(manifestType, manifestImport, section(9, leb(huge))),
			"element section: 134217727 segments, but only 0 bytes follow"},
		{"element vector", module(manifestType, manifestImport, section(9, leb(1), []byte{0x00, 0x41, 0x00, 0x0B}, leb(huge), []byte{0})),
			"element section: segment 0: 134217727 elements, but only 1 byte follows"},
		{"code count", module(manifestType, manifestImport, section(10, leb(huge))),
			"code section: 134217727 function bodies, but only 0 bytes follow"},
		{"body size", module(manifestType, manifestImport, section(10, leb(1), leb(huge), []byte{0, 0x0B})),
			"code section: function 0: a body of 134217727 bytes, but only 2 bytes follow"},
		{"locals", module(manifestType, manifestImport, section(3, leb(1), leb(0)), section(10, leb(1), body(cat(leb(1<<32-1), []byte{0x7F})))),
			"code section: function 0: 4294967295 locals, but the host allows at most 50000"},
		{"locals in groups", module(manifestType, manifestImport, section(3, leb(1), leb(0)),
			section(10, leb(1), body(cat(leb(30000), []byte{0x7F}), cat(leb(30000), []byte{0x7E})))),
			"code section: function 0: 60000 locals, but the host allows at most 50000"},
		{"locals in many functions", func() []byte {
			var funcs, bodies []byte
			for range 300 {
				funcs = append(funcs, 0)
				bodies = append(bodies, body(cat(leb(50000), []byte{0x7F}))...)
			}
			return module(manifestType, manifestImport, section(3, leb(300), funcs), section(10, leb(300), bodies))
		}(), "code section: 15000000 locals in all, but the host allows at most 50000: one per byte of the section, or 50000 if that is more"},
		{"local groups", module(manifestType, manifestImport, section(3, leb(1), leb(0)), section(10, leb(1), leb(5), leb(huge), []byte{0x0B})),
			"code section: function 0: 134217727 groups of locals, but only 1 byte follows"},
		{"data count", module(manifestType, manifestImport, section(11, leb(huge))),
			"data section: 134217727 segments, but only 0 bytes follow"},
		{"data length", module(manifestType, manifestImport, section(11, leb(1), []byte{0x01}, leb(huge), []byte("abc"))),
			"data section: segment 0: 134217727 bytes of data, but only 3 bytes follow"},
		{"tag count", module(manifestType, manifestImport, section(13, leb(huge))),
			"tag section: 134217727 tags, but only 0 bytes follow"},
		{"section size", module(manifestType, []byte{2}, leb(huge), []byte{1}),
			"import section: a size of 134217727 bytes, but only 1 byte follows"},
		{"custom name length", module(section(0, leb(huge), []byte("name"))),
			"custom section: a name of 134217727 bytes, but only 4 bytes follow"},
		// A table's elements are host memory (8 bytes each) that the
		// memory limit does not cover.
		{"table size", module(manifestType, manifestImport, section(4, leb(1), []byte{0x70, 0x00}, leb(1<<27))),
			"table section: tables of 134217728 elements, but the host allows at most 1048576 in all"},
		{"table sizes", module(manifestType, manifestImport, section(4, leb(2), []byte{0x70, 0x01}, leb(1), leb(1<<20), []byte{0x70, 0x00}, leb(1))),
			"table section: tables of 1048577 elements, but the host allows at most 1048576 in all"},
		// 64-bit tables' sizes, whose sum would wrap around to 0.
		{"table sizes wrapping", module(manifestType, manifestImport, section(4, leb(2),
			[]byte{0x70, 0x05, 0}, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, []byte{0x70, 0x05, 0, 1})),
			"table section: tables of 18446744073709551615 elements, but the host allows at most 1048576 in all"},
	}
	e := newEngine(t, t.TempDir())
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			x, err := e.LoadBytes(ctx, "bomb", "bomb.wasm", tt.code, wasm.Limits{MemoryLimit: 2 << 20}, wasm.Grants{})
			goruntime.ReadMemStats(&after)
			if err == nil {
				x.Close()
				t.Fatal("loaded")
			}
			if want := "wasm bomb.wasm: invalid module: " + tt.want; err.Error() != want {
				t.Errorf("error\n got: %v\nwant: %s", err, want)
			}
			// A load allocates about a megabyte for the wazero runtime
			// and its WASI module, whatever the module.
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Errorf("refusing a %d-byte module allocated %d MiB", len(tt.code), n>>20)
			}
		})
	}
}

// TestBoundsAcceptModules: every module the tests load, in every language,
// passes the structural check unchanged: it refuses what no toolchain
// writes, not what one does.
func TestBoundsAcceptModules(t *testing.T) {
	for name, code := range wasm.TestModules(t) {
		t.Run(name, func(t *testing.T) {
			if err := wasm.CheckBounds(code); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("go guest", func(t *testing.T) {
		if err := wasm.CheckBounds(goNoop(t)); err != nil {
			t.Error(err)
		}
	})
}

// BenchmarkCheckBounds: what the structural check adds to every load of a
// Go guest (3.8 MB, 2,368 functions), warm or cold.
func BenchmarkCheckBounds(b *testing.B) {
	code := goNoop(b)
	b.SetBytes(int64(len(code)))
	for b.Loop() {
		if err := wasm.CheckBounds(code); err != nil {
			b.Fatal(err)
		}
	}
}
