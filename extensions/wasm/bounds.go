package wasm

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Bounds.
//
// A module's binary format prefixes every vector with its length, and a
// decoder that sizes the vector by that length before reading it lets a
// module of a few dozen bytes claim gigabytes: wazero's does so for most
// sections, names, data segments and a function's locals. FuzzMeter found
// the first (an export count of 221 million: 9 s and about 11 GB to refuse
// a 58-byte module); a function declaring 2^32 - 1 locals ends the host
// process with "out of memory". checkBounds walks the module's structure
// before wazero sees it, and refuses
//
//   - a count or a length greater than the bytes left to hold it (every
//     element of a vector takes at least one byte), so that what the decoder
//     allocates is bounded by the module's size;
//   - a function with more than maxLocals locals, the limit web engines
//     apply (the WebAssembly JS API's implementation limits), and more
//     locals in all than maxLocals or the code section's bytes, whichever
//     is more: locals cost the decoder and the compiler memory by their
//     count, not their bytes (a group of locals is a count and a type), so
//     that 300 functions of 50,000 locals each, 2.4 KB, cost 231 MiB. A Go
//     guest declares about one local per 240 bytes of code;
//   - tables of more than maxTableElements elements together. A table's
//     elements are host memory, 8 bytes each in every instance, which the
//     memory limit does not cover. (Growing a table past it at run time is
//     the metering's to refuse: see meterer.body.)
//
// It checks only what the decoder would allocate by; validity is wazero's
// to judge, after.

const (
	// maxLocals is the most locals one function may declare.
	maxLocals = 50_000
	// maxTableElements bounds the elements of a module's tables together
	// (8 MiB of host memory per instance).
	maxTableElements = 1 << 20
)

// checkBounds refuses a module whose counts and lengths claim more than
// its bytes hold, or that goes past the host's structural limits (see
// above).
// It assumes code starts with the WebAssembly magic number.
func checkBounds(code []byte) error {
	if len(code) < 8 {
		return errors.New("shorter than a WebAssembly header")
	}
	r := &reader{b: code, i: 8}
	var tables uint64 // elements, imported and defined
	for !r.done() {
		id := r.byte()
		n := r.u32()
		if left, short := r.short(n); short {
			return fmt.Errorf("%s: a size of %d bytes, but %s", sectionName(id), n, follow(left))
		}
		body := r.bytes(int(n))
		if r.err != nil {
			return fmt.Errorf("%s: %w", sectionName(id), r.err)
		}
		s := &bounded{reader: reader{b: body}}
		switch id {
		case secCustom:
			s.vec("a name of %d bytes")
		case secType:
			s.types()
		case secImport:
			tables = addElements(tables, s.imports())
		case secFunction:
			s.count("functions")
		case secTable:
			tables = addElements(tables, s.tables())
		case secMemory:
			s.count("memories")
		case secGlobal:
			s.count("globals")
		case secExport:
			for i := range s.count("exports") {
				s.in("export", i)
				s.vec("a name of %d bytes")
				s.byte()
				s.u32()
				s.out()
			}
		case secElement:
			s.elements()
		case secCode:
			s.code()
		case secData:
			s.data()
		case secTag:
			s.count("tags")
		}
		if err := s.failure(); err != nil {
			return fmt.Errorf("%s: %w", sectionName(id), err)
		}
		if tables > maxTableElements {
			return fmt.Errorf("%s: tables of %d elements, but the host allows at most %d in all", sectionName(id), tables, maxTableElements)
		}
	}
	return r.err
}

// addElements adds table sizes, saturating: a 64-bit table's maximum
// may be anything.
func addElements(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// sectionName names section id in errors.
func sectionName(id byte) string {
	names := [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count", "tag"}
	if int(id) < len(names) {
		return names[id] + " section"
	}
	return fmt.Sprintf("section %d", id)
}

// short reports whether fewer than n bytes are left to read, and how
// many are.
func (r *reader) short(n uint32) (left int, short bool) {
	left = len(r.b) - r.i
	return left, r.err == nil && int64(n) > int64(left)
}

// follow says how many bytes are left.
func follow(n int) string {
	if n == 1 {
		return "only 1 byte follows"
	}
	return fmt.Sprintf("only %d bytes follow", n)
}

// bounded reads one section for checkBounds. Its errors are about the
// entry path names ("export 3"): in and out keep the path, which stops
// where the first error was, and it is written only then (a Go guest has
// tens of thousands of data segments).
type bounded struct {
	reader
	path []entry
}

// entry is a step of a path: the entry i of a vector of what.
type entry struct {
	what string
	i    uint32
}

// in enters entry i of what; out leaves it. Neither moves once there is
// an error.
func (s *bounded) in(what string, i uint32) {
	if s.err == nil {
		s.path = append(s.path, entry{what, i})
	}
}

func (s *bounded) out() {
	if s.err == nil {
		s.path = s.path[:len(s.path)-1]
	}
}

// failure returns the section's error, after the path to its entry.
func (s *bounded) failure() error {
	if s.err == nil || len(s.path) == 0 {
		return s.err
	}
	parts := make([]string, len(s.path))
	for i, e := range s.path {
		parts[i] = strings.TrimSpace(fmt.Sprintf("%s %d", e.what, e.i))
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, ": "), s.err)
}

// refuse records the first error.
func (s *bounded) refuse(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

// count reads a vector's length, which the bytes left must hold: each
// element takes at least one.
func (s *bounded) count(what string) uint32 {
	n := s.u32()
	if left, short := s.short(n); short {
		s.refuse("%d %s, but %s", n, what, follow(left))
	}
	if s.err != nil {
		return 0
	}
	return n
}

// vec reads a vector of bytes (a name, a data segment's data); format
// describes it with its length.
func (s *bounded) vec(format string) {
	n := s.u32()
	if left, short := s.short(n); short {
		s.refuse(format+", but %s", n, follow(left))
		return
	}
	s.bytes(int(n))
}

func (s *bounded) types() {
	for i := range s.count("types") {
		s.in("type", i)
		if s.peek() == 0x4E { // a recursion group of function types
			s.byte()
			for j := range s.count("types in a group") {
				s.in("", j)
				s.funcType()
				s.out()
			}
		} else {
			s.funcType()
		}
		s.out()
	}
}

func (s *bounded) funcType() {
	if form := s.byte(); form != 0x60 && s.err == nil {
		s.refuse("form 0x%02x, want 0x60 (a function type)", form)
		return
	}
	for range s.count("parameters") {
		s.valtype()
	}
	for range s.count("results") {
		s.valtype()
	}
}

// imports returns the elements of the imported tables.
func (s *bounded) imports() uint64 {
	var tables uint64
	for i := range s.count("imports") {
		s.in("import", i)
		s.vec("a name of %d bytes")
		s.vec("a name of %d bytes")
		switch kind := s.byte(); kind {
		case 0x00:
			s.u32()
		case 0x01:
			most, _ := s.tableType()
			tables = addElements(tables, most)
		case 0x02:
			s.limits()
		case 0x03:
			s.valtype()
			s.byte()
		case 0x04:
			s.byte()
			s.u32()
		default:
			s.refuse("kind 0x%02x", kind)
		}
		s.out()
	}
	return tables
}

// tables returns the elements of the defined tables.
func (s *bounded) tables() uint64 {
	var tables uint64
	for i := range s.count("tables") {
		s.in("table", i)
		most, _ := s.table()
		tables = addElements(tables, most)
		s.out()
	}
	return tables
}

func (s *bounded) elements() {
	for i := range s.count("segments") {
		s.in("segment", i)
		flags := s.u32()
		if flags > 7 {
			s.refuse("flags %d", flags)
		}
		if flags&0x02 != 0 && flags&0x01 == 0 { // an explicit table index
			s.u32()
		}
		if flags&0x01 == 0 { // active: an offset
			s.expr()
		}
		exprs := flags&0x04 != 0
		if flags&0x03 != 0 { // an element kind or a reference type
			if exprs {
				s.valtype()
			} else {
				s.byte()
			}
		}
		for range s.count("elements") {
			if exprs {
				s.expr()
			} else {
				s.u32()
			}
		}
		s.out()
	}
}

func (s *bounded) code() {
	var all uint64
	for i := range s.count("function bodies") {
		s.in("function", i)
		size := s.u32()
		if left, short := s.short(size); short {
			s.refuse("a body of %d bytes, but %s", size, follow(left))
		}
		end := s.i + int(size)
		var locals uint64
		for range s.count("groups of locals") {
			locals += uint64(s.u32())
			s.valtype()
		}
		if s.err == nil && locals > maxLocals {
			s.refuse("%d locals, but the host allows at most %d", locals, maxLocals)
		}
		all += locals
		if s.err == nil && s.i > end {
			s.refuse("locals past the end of the body")
		}
		s.out()
		if s.err != nil {
			return
		}
		s.i = end
	}
	if most := max(maxLocals, len(s.b)); s.err == nil && all > uint64(most) {
		s.refuse("%d locals in all, but the host allows at most %d: one per byte of the section, or %d if that is more", all, most, maxLocals)
	}
}

func (s *bounded) data() {
	for i := range s.count("segments") {
		s.in("segment", i)
		switch flags := s.u32(); flags {
		case 0:
			s.expr()
		case 1:
		case 2:
			s.u32()
			s.expr()
		default:
			s.refuse("flags %d", flags)
		}
		s.vec("%d bytes of data")
		s.out()
	}
}
