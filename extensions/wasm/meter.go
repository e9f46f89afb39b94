package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Metering.
//
// wazero can stop a running guest only at loop headers, and only by leaving
// native code for Go at every iteration of every loop, with a goroutine per
// call to watch the context (RuntimeConfig.WithCloseOnContextDone). That
// costs ~0.5 µs per hook call and more for Go guests, whose runtime loops a
// lot; and a hook without loops — exponential recursion — is never
// stopped, and blocks the host's garbage collector, which waits for a
// goroutine stuck in native code.
//
// So the host meters guests itself. At load, it rewrites the module's code:
// at every function entry and every loop header it inserts a decrement of a
// fuel counter (a global it appends); when the counter reaches zero, the
// code calls the host — through the module's own ganglion.manifest import,
// with the reserved arguments (-1, -1) — and refills it. Every unbounded
// execution passes function entries or loop headers, so the host is called
// at least once per meterFuel of them: there it traps a guest that overran
// its deadline, and the goroutine passes through Go, where the scheduler
// and the collector can stop it.

// meterFuel is how many function entries and loop iterations a guest runs
// between two calls to the host: about 10–50 µs of guest work.
const meterFuel = 10000

// yieldArg is the reserved argument of the metering call to manifest.
const yieldArg = 0xFFFFFFFF

// Section IDs.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// meter returns code with metering inserted (see above). It refuses a
// module it cannot parse, one that does not import ganglion.manifest, and
// one whose code or exports name a global past the module's own: the fuel
// counter is the global after them, so no index the guest uses can name it
// (a host that validates first never sees such a module; meter refuses it
// on its own, so that the guarantee does not rest on validation alone).
// Custom sections that hold code offsets (DWARF, branch hints) are
// dropped, since the offsets move.
func meter(code []byte) ([]byte, error) {
	if len(code) < 8 || !bytes.Equal(code[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly binary")
	}
	if !bytes.Equal(code[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("WebAssembly binary version %v, want 1", code[4:8])
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	r := &reader{b: code, i: 8}
	for !r.done() {
		id := r.byte()
		n := r.u32()
		body := r.bytes(int(n))
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %w", id, r.err)
		}
		secs = append(secs, section{id, body})
	}
	var (
		manifest      = -1
		funcImports   int
		globalImports int
		globals       = -1   // defined globals; -1: no global section
		types         = -1   // types; -1: no type section
		funcs         int    // defined functions
		growable      []bool // by table index: the table declares a maximum
	)
	for _, s := range secs {
		r := &reader{b: s.body}
		switch s.id {
		case secType:
			types = int(r.u32())
		case secFunction:
			funcs = int(r.u32())
		case secImport:
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				mod, name := r.name(), r.name()
				switch kind := r.byte(); kind {
				case 0x00: // func
					r.u32()
					if mod == hostModuleName && name == "manifest" {
						manifest = funcImports
					}
					funcImports++
				case 0x01: // table
					_, hasMax := r.tableType()
					growable = append(growable, hasMax)
				case 0x02: // memory
					r.limits()
				case 0x03: // global
					r.s33()
					r.byte()
					globalImports++
				case 0x04: // tag
					r.byte()
					r.u32()
				default:
					r.fail("import kind 0x%02x", kind)
				}
			}
		case secGlobal:
			globals = int(r.u32())
		case secTable:
			for n := r.u32(); n > 0 && r.err == nil; n-- {
				_, hasMax := r.table()
				growable = append(growable, hasMax)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, r.err)
		}
	}
	if manifest < 0 {
		return nil, errors.New("does not import ganglion.manifest, which every Ganglion guest calls (see sdk/ABI.md)")
	}
	// The fuel counter is the global after the guest's own (imported ones
	// first, then defined ones): an index no valid guest code names, and
	// meterCode refuses code that names it.
	fuel := globalImports + max(globals, 0)
	for _, s := range secs {
		if s.id == secExport {
			if err := checkExports(s.body, uint32(fuel)); err != nil {
				return nil, fmt.Errorf("export section: %w", err)
			}
		}
	}
	// charge and chargeGrow are functions the host appends (after the
	// guest's, so no index shifts), of a type it appends: bulk operations
	// and memory.grow call them with their size (see chargeCode).
	chargeFunc, chargeType := funcImports+funcs, max(types, 0)
	m := meterer{
		check:      checkCode(uint32(fuel), uint32(manifest)),
		charge:     appendU32([]byte{0x10}, uint32(chargeFunc)),
		chargeGrow: appendU32([]byte{0x10}, uint32(chargeFunc+1)),
		globals:    uint32(fuel),
		growable:   growable,
	}
	var code2 []byte
	for _, s := range secs {
		if s.id == secCode {
			var err error
			if code2, err = m.code(s.body); err != nil {
				return nil, fmt.Errorf("code section: %w", err)
			}
		}
	}
	if m.bulk && (types < 0 || code2 == nil) {
		return nil, errors.New("bulk operations without a type or function section")
	}

	out := bytes.NewBuffer(make([]byte, 0, len(code)+len(code)/8))
	out.Write(code[:8])
	wroteGlobal := false
	writeGlobalSection := func(body []byte, count int) {
		var g []byte
		g = appendU32(g, uint32(count+1))
		g = append(g, body...)
		// (global (mut i32) (i32.const meterFuel))
		g = append(g, 0x7F, 0x01, 0x41)
		g = appendS32(g, meterFuel)
		g = append(g, 0x0B)
		writeSection(out, secGlobal, g)
		wroteGlobal = true
	}
	// appendEntries writes a vector section with n more entries.
	appendEntries := func(id byte, body []byte, n uint32, entries []byte) {
		r := &reader{b: body}
		count := r.u32()
		v := appendU32(nil, count+n)
		v = append(v, body[r.i:]...)
		writeSection(out, id, append(v, entries...))
	}
	for _, s := range secs {
		if !wroteGlobal && globals < 0 && afterGlobal(s.id) {
			writeGlobalSection(nil, 0)
		}
		switch s.id {
		case secCustom:
			if dropCustom(s.body) {
				continue
			}
			writeSection(out, s.id, s.body)
		case secType:
			if !m.bulk {
				writeSection(out, s.id, s.body)
				continue
			}
			appendEntries(s.id, s.body, 1, []byte{0x60, 0x01, 0x7F, 0x01, 0x7F}) // (func (param i32) (result i32))
		case secFunction:
			if !m.bulk {
				writeSection(out, s.id, s.body)
				continue
			}
			t := appendU32(nil, uint32(chargeType))
			appendEntries(s.id, s.body, 2, append(t, t...))
		case secGlobal:
			r := &reader{b: s.body}
			r.u32()
			writeGlobalSection(s.body[r.i:], globals)
		case secCode:
			n := m.funcs
			if m.bulk {
				for _, c := range [][]byte{chargeCode(uint32(fuel), uint32(manifest), false), chargeCode(uint32(fuel), uint32(manifest), true)} {
					code2 = append(appendU32(code2, uint32(len(c))), c...)
				}
				n += 2
			}
			writeSection(out, s.id, append(appendU32(nil, uint32(n)), code2...))
		default:
			writeSection(out, s.id, s.body)
		}
	}
	if !wroteGlobal {
		writeGlobalSection(nil, 0)
	}
	return out.Bytes(), nil
}

// checkExports refuses an export of a global at or past index fuel.
func checkExports(sec []byte, fuel uint32) error {
	r := &reader{b: sec}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		name := r.name()
		kind := r.byte()
		if i := r.u32(); kind == 0x03 && i >= fuel && r.err == nil {
			return fmt.Errorf("export %q: global %d, but the module has %d globals", name, i, fuel)
		}
	}
	return r.err
}

// afterGlobal reports whether a section of id comes after the global
// section.
func afterGlobal(id byte) bool {
	switch id {
	case secExport, secStart, secElement, secDataCount, secCode, secData:
		return true
	}
	return false
}

// dropCustom reports whether a custom section holds code offsets.
func dropCustom(body []byte) bool {
	r := &reader{b: body}
	name := r.name()
	return strings.HasPrefix(name, ".debug_") || strings.HasPrefix(name, "metadata.code.") || name == "sourceMappingURL"
}

// checkCode is the metering check: decrement the fuel; at zero, call the
// host and refill.
func checkCode(fuel, manifest uint32) []byte {
	var c []byte
	c = append(c, 0x23)
	c = appendU32(c, fuel) // global.get fuel
	c = append(c, 0x41, 0x01, 0x6B, 0x24)
	c = appendU32(c, fuel) // i32.const 1; i32.sub; global.set fuel
	c = append(c, 0x23)
	c = appendU32(c, fuel)
	c = append(c, 0x45, 0x04, 0x40) // global.get fuel; i32.eqz; if
	c = appendRefill(c, fuel, manifest)
	c = append(c, 0x0B) // end
	return c
}

// appendRefill appends the call to the host and the refill of the fuel.
func appendRefill(c []byte, fuel, manifest uint32) []byte {
	c = append(c, 0x41, 0x7F, 0x41, 0x7F) // i32.const -1; i32.const -1
	c = append(c, 0x10)
	c = appendU32(c, manifest) // call manifest
	c = append(c, 0x1A, 0x41)  // drop; i32.const meterFuel
	c = appendS32(c, meterFuel)
	c = append(c, 0x24)
	return appendU32(c, fuel) // global.set fuel
}

// bulkShift converts the size of a bulk operation to fuel: one unit per
// 2^bulkShift bytes (or table elements), about what a loop iteration costs.
const bulkShift = 6

// growShift converts the pages of memory.grow to fuel: 64 KiB a page,
// as a bulk operation's bytes (growing may copy the whole memory).
const growShift = 16 - bulkShift

// chargeCode is the body of a charge function, (param $n i32) (result
// i32): it takes n>>bulkShift from the fuel (for memory.grow, pages:
// n<<growShift, and nothing for more pages than a memory can have, which
// fails), calls the host when the fuel is spent, and returns n, so that a
// call to it before the operation leaves the operation's operands as they
// were. The fuel stays at least 1 after it, as checkCode's test for zero
// needs.
func chargeCode(fuel, manifest uint32, grow bool) []byte {
	c := []byte{0x00} // no locals
	c = append(c, 0x23)
	c = appendU32(c, fuel) // global.get fuel
	if grow {
		// local.get $n; i32.const 65536; i32.le_u; if (result i32)
		// local.get $n; i32.const growShift; i32.shl; else i32.const 0; end
		c = append(c, 0x20, 0x00, 0x41, 0x80, 0x80, 0x04, 0x4D, 0x04, 0x7F)
		c = append(c, 0x20, 0x00, 0x41, growShift, 0x74, 0x05, 0x41, 0x00, 0x0B)
	} else {
		c = append(c, 0x20, 0x00, 0x41, bulkShift, 0x76) // local.get $n; i32.const bulkShift; i32.shr_u
	}
	c = append(c, 0x6B, 0x24) // i32.sub; global.set fuel
	c = appendU32(c, fuel)
	c = append(c, 0x23)
	c = appendU32(c, fuel)
	c = append(c, 0x41, 0x01, 0x48, 0x04, 0x40) // global.get fuel; i32.const 1; i32.lt_s; if
	c = appendRefill(c, fuel, manifest)
	c = append(c, 0x0B)       // end
	c = append(c, 0x20, 0x00) // local.get $n
	return append(c, 0x0B)    // end
}

// meterer inserts the metering into a code section.
type meterer struct {
	check      []byte // at every function entry and loop header
	charge     []byte // the call to the charge function, before every bulk operation
	chargeGrow []byte // the call to the other, before every memory.grow
	globals    uint32 // the guest's globals: any index from it on is refused
	growable   []bool // by table index: table.grow may grow it (it declares a maximum)
	funcs      int    // function bodies written
	bulk       bool   // a bulk operation or memory.grow was found: the charge functions are needed
}

// code returns the function bodies of the code section sec, metered,
// without their count (meterer.funcs).
func (m *meterer) code(sec []byte) ([]byte, error) {
	r := &reader{b: sec}
	n := r.u32()
	out := make([]byte, 0, len(sec)+min(int(n), len(sec))*len(m.check)*2) // n as read: checkBounds may not have run
	var body []byte
	for f := uint32(0); f < n && r.err == nil; f++ {
		size := r.u32()
		fb := r.bytes(int(size))
		if r.err != nil {
			break
		}
		var err error
		body, err = m.body(body[:0], fb)
		if err != nil {
			return nil, fmt.Errorf("function %d: %w", f, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.done() {
		return nil, errors.New("bytes after the last function body")
	}
	m.funcs = int(n)
	return out, nil
}

// body inserts the check at the entry of a function body and after every
// loop header, and the charge before every bulk operation.
func (m *meterer) body(out, fb []byte) ([]byte, error) {
	r := &reader{b: fb}
	for n := r.u32(); n > 0 && r.err == nil; n-- { // locals
		r.u32()
		r.s33()
	}
	if r.err != nil {
		return nil, fmt.Errorf("locals: %w", r.err)
	}
	out = append(out, fb[:r.i]...)
	out = append(out, m.check...)
	start := r.i
	for !r.done() && r.err == nil {
		at := r.i
		switch op := r.byte(); op {
		case 0x23, 0x24: // global.get, global.set
			if g := r.u32(); g >= m.globals && r.err == nil {
				return nil, fmt.Errorf("offset %d: global %d, but the module has %d globals", at, g, m.globals)
			}
		case 0x03: // loop bt: check at the header
			r.s33()
			if r.err == nil {
				out = append(out, fb[start:r.i]...)
				out = append(out, m.check...)
				start = r.i
			}
		case 0x40: // memory.grow
			r.u32()
			out = append(out, fb[start:at]...)
			out = append(out, m.chargeGrow...)
			start = at
			m.bulk = true
		case 0xFC:
			sub := r.u32()
			if sub == 15 { // table.grow x
				// A table is host memory the memory limit does not cover:
				// checkBounds counts each at its maximum, so one without
				// a maximum must not grow.
				if x := r.u32(); r.err == nil && (int(x) >= len(m.growable) || !m.growable[x]) {
					return nil, fmt.Errorf("offset %d: table.grow on table %d, which declares no maximum "+
						"(the host allows tables of %d elements in all, counted at their maximum)", at, x, maxTableElements)
				}
			} else {
				r.skipFC(sub)
			}
			switch sub {
			case 8, 10, 11, 12, 14, 15, 17: // memory.init, memory.copy, memory.fill, table.init, table.copy, table.grow, table.fill
				// The size is the last operand, on top of the stack.
				out = append(out, fb[start:at]...)
				out = append(out, m.charge...)
				start = at
				m.bulk = true
			}
		default:
			r.skipImmediates(op)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return append(out, fb[start:]...), nil
}

func writeSection(w *bytes.Buffer, id byte, body []byte) {
	w.WriteByte(id)
	w.Write(appendU32(nil, uint32(len(body))))
	w.Write(body)
}

// reader decodes the binary format. The first error sticks; reads after it
// return zeros.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.i >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("offset %d: %s", r.i, fmt.Sprintf(format, args...))
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.i >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.i {
		r.fail("%d bytes past the end", n)
		return nil
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b
}

// leb reads an LEB128 number of at most maxBits bits and returns its
// unsigned value.
func (r *reader) leb(maxBits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= maxBits+7 {
			r.fail("LEB128 number too long")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7F) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.leb(32)) }
func (r *reader) s33()        { r.leb(33) }
func (r *reader) u64()        { r.leb(64) }

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

// limits reads limits and returns the most they allow: their maximum if
// they have one (hasMax), else their minimum.
func (r *reader) limits() (most uint64, hasMax bool) {
	flags := r.byte()
	hasMax = flags&0x01 != 0
	bits := uint(32)
	if flags&0x04 != 0 { // memory64, table64
		bits = 64
	}
	most = r.leb(bits)
	if hasMax {
		most = r.leb(bits)
	}
	return most, hasMax
}

// peek returns the next byte without reading it, or 0 at the end.
func (r *reader) peek() byte {
	if r.err != nil || r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// valtype reads a value type: one byte, or a reference type's prefix and
// heap type.
func (r *reader) valtype() {
	if b := r.byte(); b == 0x63 || b == 0x64 {
		r.s33()
	}
}

// expr reads a constant expression, up to its end.
func (r *reader) expr() {
	for r.err == nil {
		op := r.byte()
		if op == 0x0B {
			return
		}
		r.skipImmediates(op)
	}
}

// tableType reads a table's type (a reference type and limits) and
// returns its limits (see [reader.limits]).
func (r *reader) tableType() (most uint64, hasMax bool) {
	r.valtype()
	return r.limits()
}

// table reads an entry of the table section: a table type, after 0x40
// 0x00 and before an initializer for a table that has one.
func (r *reader) table() (most uint64, hasMax bool) {
	init := r.peek() == 0x40
	if init {
		r.bytes(2)
	}
	most, hasMax = r.tableType()
	if init {
		r.expr()
	}
	return most, hasMax
}

func (r *reader) memarg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.u64()
}

// skipImmediates skips the immediates of the instruction op.
func (r *reader) skipImmediates(op byte) {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06: // block, loop, if, try
		r.s33()
	case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x18: // catch, throw, rethrow, delegate
		r.u32()
	case op == 0x0C || op == 0x0D || op == 0xD5 || op == 0xD6: // br, br_if, br_on_null, br_on_non_null
		r.u32()
	case op == 0x0E: // br_table
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.u32()
		}
		r.u32()
	case op == 0x10 || op == 0x12 || op == 0x14 || op == 0x15 || op == 0xD2: // call, return_call, call_ref, return_call_ref, ref.func
		r.u32()
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1C: // select t*
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.s33()
		}
	case op == 0x1F: // try_table bt catch*
		r.s33()
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			switch k := r.byte(); k {
			case 0x00, 0x01:
				r.u32()
				r.u32()
			case 0x02, 0x03:
				r.u32()
			default:
				r.fail("catch kind 0x%02x", k)
			}
		}
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3E: // loads and stores
		r.memarg()
	case op == 0x3F || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41: // i32.const
		r.leb(32)
	case op == 0x42: // i64.const
		r.leb(64)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xD0: // ref.null ht
		r.s33()
	case op == 0xFC:
		r.skipFC(r.u32())
	case op == 0xFD:
		r.skipFD(r.u32())
	case op == 0xFE:
		if sub := r.u32(); sub == 0x03 { // atomic.fence
			r.byte()
		} else {
			r.memarg()
		}
	case op <= 0x01 || op == 0x05 || op == 0x0A || op == 0x0B || op == 0x0F || op == 0x19 || op == 0x1A || op == 0x1B ||
		(op >= 0x45 && op <= 0xC4) || op == 0xD1 || op == 0xD3 || op == 0xD4:
		// no immediates
	default:
		r.fail("unknown opcode 0x%02x", op)
	}
}

func (r *reader) skipFC(sub uint32) {
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init data mem
		r.u32()
		r.u32()
	case sub == 9: // data.drop
		r.u32()
	case sub == 10: // memory.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		r.u32()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	case sub == 13 || sub == 15 || sub == 16 || sub == 17: // elem.drop, table.grow/size/fill
		r.u32()
	default:
		r.fail("unknown 0xFC opcode %d", sub)
	}
}

func (r *reader) skipFD(sub uint32) {
	switch {
	case sub <= 11: // v128 loads and stores
		r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract and replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load and store lane
		r.memarg()
		r.byte()
	case sub == 92 || sub == 93: // load zero
		r.memarg()
	default: // the rest (arithmetic, relaxed SIMD) have no immediates
		if sub > 0x113 {
			r.fail("unknown 0xFD opcode %d", sub)
		}
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
