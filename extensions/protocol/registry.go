package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// FieldType is the type of a field's value.
type FieldType uint8

const (
	// TextField is free text. Its first line follows the colon; lines after
	// it that are not field lines continue it.
	TextField FieldType = iota + 1
	// BoolField is true, false, yes or no, in any case.
	BoolField
	// ListField is a non-empty list, written inline as [a, b, "c, d"] or as
	// "- item" lines under an empty "name:" line.
	ListField
)

// String returns "text", "bool" or "list".
func (t FieldType) String() string {
	switch t {
	case TextField:
		return "text"
	case BoolField:
		return "bool"
	case ListField:
		return "list"
	}
	return fmt.Sprintf("FieldType(%d)", uint8(t))
}

// FieldSpec declares one field of a [Kind].
type FieldSpec struct {
	// Name is the field's name: a lowercase identifier ([a-z_][a-z0-9_]*).
	// Field lines match it ignoring case.
	Name string
	// Type is the type of the field's value.
	Type FieldType
	// Required fields must be present, and a required text field must not be
	// empty.
	Required bool
}

// Kind declares one kind of block: its tag name, its fields and the function
// that turns parsed fields into a typed value.
type Kind struct {
	// Name is the tag name, as in [NAME] ... [/NAME]: [A-Z][A-Z0-9_]*, at most
	// 64 characters.
	Name string
	// Fields are the fields a block of this kind may hold. Any other field is
	// an error.
	Fields []FieldSpec
	// Build checks the fields of a block whose syntax is valid (every field
	// known, well-formed and present when required) and returns the block's
	// typed value. It reports problems as a *[FieldError] (several joined with
	// [errors.Join]) so that each message names the line of its field; any
	// other error is reported at the block's opening line. A panic in Build
	// is recovered and reported as an error of the block.
	//
	// When Build is nil the block's value is its *[Fields].
	Build func(f *Fields) (any, error)
}

// maxKindName bounds a kind's name, and with it the length of a tag line.
const maxKindName = 64

// Registry holds the kinds of block the protocol scanner recognises. The
// zero value is an empty registry ready to use.
//
// # Concurrency
//
// A Registry is safe for concurrent use. The scanner reads the registry when
// it is created and again after each response it scans, so a kind registered
// while a response is being scanned is recognised from the next response on.
type Registry struct {
	mu    sync.Mutex              // serialises writers
	kinds atomic.Pointer[kindSet] // copy-on-write; readers never lock
}

// kindSet is an immutable snapshot of a registry.
type kindSet struct {
	byName map[string]*kind
}

// kind is a registered [Kind], copied and prepared for the parser.
type kind struct {
	name   string
	fields []FieldSpec // names lowercase
	build  func(*Fields) (any, error)
	known  string // "category, question, ..." for error messages
}

// DefaultRegistry returns a new registry holding the built-in kinds:
// USER_QUESTION ([Question]), DEPENDENCY_REQUEST ([DependencyRequest]) and
// PHASE_COMPLETE ([PhaseComplete]). Each call returns a new registry, so
// kinds registered in one do not leak into another.
func DefaultRegistry() *Registry {
	r := new(Registry)
	for _, k := range []Kind{questionKind, dependencyKind, phaseKind} {
		if err := r.Register(k); err != nil {
			panic("protocol: built-in kind: " + err.Error()) // programmer error
		}
	}
	return r
}

// Register adds a kind. It refuses a malformed name, a name already
// registered, and malformed or duplicate field specs. Register copies k; later
// changes to k.Fields do not affect the registry.
func (r *Registry) Register(k Kind) error {
	kd, err := prepareKind(k)
	if err != nil {
		return fmt.Errorf("register kind %q: %w", k.Name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.load()
	if _, dup := old.byName[kd.name]; dup {
		return fmt.Errorf("register kind %q: already registered", k.Name)
	}
	next := &kindSet{byName: make(map[string]*kind, len(old.byName)+1)}
	for name, v := range old.byName {
		next.byName[name] = v
	}
	next.byName[kd.name] = kd
	r.kinds.Store(next)
	return nil
}

var emptyKinds = &kindSet{}

func (r *Registry) load() *kindSet {
	if s := r.kinds.Load(); s != nil {
		return s
	}
	return emptyKinds
}

func prepareKind(k Kind) (*kind, error) {
	if !validKindName(k.Name) {
		return nil, errors.New("name must match [A-Z][A-Z0-9_]* and be at most 64 characters")
	}
	kd := &kind{name: k.Name, fields: make([]FieldSpec, len(k.Fields)), build: k.Build}
	names := make([]string, len(k.Fields))
	for i, f := range k.Fields {
		if !validFieldName(f.Name) {
			return nil, fmt.Errorf("field %q: name must match [a-z_][a-z0-9_]*", f.Name)
		}
		if f.Type < TextField || f.Type > ListField {
			return nil, fmt.Errorf("field %q: unknown type %v", f.Name, f.Type)
		}
		if slices.Contains(names[:i], f.Name) {
			return nil, fmt.Errorf("field %q: declared twice", f.Name)
		}
		names[i] = f.Name
		kd.fields[i] = f
	}
	kd.known = strings.Join(names, ", ")
	return kd, nil
}

// field returns the index of the field spec whose name matches name ignoring
// ASCII case, or -1.
func (k *kind) field(name string) int {
	for i := range k.fields {
		if strings.EqualFold(k.fields[i].Name, name) {
			return i
		}
	}
	return -1
}

func validKindName(s string) bool {
	if len(s) == 0 || len(s) > maxKindName || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// isNameByte reports whether c may appear in a kind name after its first
// letter.
func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func validFieldName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Fields are the parsed fields of one block, handed to a [Kind]'s Build. A
// Fields is not changed after Build is called and is safe for concurrent
// reads.
type Fields struct {
	kind *kind
	open int // line of the opening tag
	vals []fieldValue
}

type fieldValue struct {
	set  bool
	line int
	text string
	b    bool
	list []string
}

// Has reports whether the field was given. An optional text field given with
// an empty value counts as not given.
func (f *Fields) Has(name string) bool {
	v := f.value(name)
	return v != nil && v.set
}

// Text returns a text field's value, with surrounding white space removed and
// continuation lines joined with "\n"; "" if it was not given.
func (f *Fields) Text(name string) string {
	if v := f.value(name); v != nil {
		return v.text
	}
	return ""
}

// Bool returns a bool field's value; false if it was not given.
func (f *Fields) Bool(name string) bool {
	if v := f.value(name); v != nil {
		return v.b
	}
	return false
}

// List returns a copy of a list field's items; nil if it was not given.
func (f *Fields) List(name string) []string {
	if v := f.value(name); v != nil {
		return slices.Clone(v.list)
	}
	return nil
}

// Line returns the line on which the field was given, or the line of the
// block's opening tag if it was not.
func (f *Fields) Line(name string) int {
	if v := f.value(name); v != nil && v.set {
		return v.line
	}
	return f.open
}

func (f *Fields) value(name string) *fieldValue {
	if i := f.kind.field(name); i >= 0 {
		return &f.vals[i]
	}
	return nil
}

// MarshalJSON encodes the fields that are set as one JSON object, in the
// kind's field order: text as a string, bool as a boolean, list as an
// array. Blocks of a kind without Build reach event subscribers so.
func (f *Fields) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, spec := range f.kind.fields {
		v := &f.vals[i]
		if !v.set {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(spec.Name)
		b = append(append(b, name...), ':')
		var val any
		switch spec.Type {
		case BoolField:
			val = v.b
		case ListField:
			val = v.list
		default:
			val = v.text
		}
		enc, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	return append(b, '}'), nil
}
