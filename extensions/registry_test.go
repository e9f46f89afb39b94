package extensions_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/store"
)

// factory returns a Factory whose extension registers nothing and whose
// identity shows in the error it returns for a nil config, so that tests can
// tell factories apart (funcs are not comparable).
func factory(id string) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		if cfg == nil {
			return nil, errors.New(id)
		}
		return extensions.Func(func(*extensions.API) error { return nil }), nil
	}
}

// identify calls f with a nil config and returns the id factory gave it.
func identify(f extensions.Factory) string {
	_, err := f(nil)
	if err == nil {
		return "<no id>"
	}
	return err.Error()
}

func TestRegistryRegister(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name    string
		ext     string
		factory extensions.Factory
		want    string
	}{
		{name: "valid", ext: "audit", factory: factory("f")},
		{name: "all allowed characters", ext: "a-Z_0.9", factory: factory("f")},
		{name: "64 characters", ext: strings.Repeat("a", 64), factory: factory("f")},
		{name: "space", ext: "my ext", factory: factory("f"),
			want: `store: invalid extension name "my ext": character " " at offset 2 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "slash", ext: "a/b", factory: factory("f"),
			want: `store: invalid extension name "a/b": character "/" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "non-ASCII", ext: "héllo", factory: factory("f"),
			want: `store: invalid extension name "héllo": character "é" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "empty", ext: "", factory: factory("f"),
			want: `store: invalid extension name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "65 characters", ext: long, factory: factory("f"),
			want: `store: invalid extension name "` + long + `": 65 bytes long (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "nil factory", ext: "audit", factory: nil,
			want: `extension "audit": nil factory`},
		{name: "invalid name and nil factory", ext: "", factory: nil,
			want: `store: invalid extension name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := extensions.NewRegistry()
			err := r.Register(tt.ext, tt.factory)
			checkErr(t, err, tt.want)
			_, found := r.Lookup(tt.ext)
			if found != (tt.want == "") {
				t.Errorf("Lookup(%q) found = %v after Register err = %v", tt.ext, found, err)
			}
			if tt.want != "" {
				if !slices.Equal(r.Names(), []string{}) {
					t.Errorf("Names() = %q after a refused Register, want none", r.Names())
				}
				if strings.HasPrefix(tt.want, "store:") && !errors.Is(err, store.ErrInvalidName) {
					t.Errorf("errors.Is(%v, store.ErrInvalidName) = false", err)
				}
			}
		})
	}
}

func TestRegistryDuplicate(t *testing.T) {
	r := extensions.NewRegistry()
	if err := r.Register("x", factory("first")); err != nil {
		t.Fatal(err)
	}
	checkErr(t, r.Register("x", factory("second")), `extension "x" is already registered`)
	// A nil factory under a taken name is refused for the nil factory.
	checkErr(t, r.Register("x", nil), `extension "x": nil factory`)
	f, ok := r.Lookup("x")
	if !ok {
		t.Fatal(`Lookup("x") not found`)
	}
	if got := identify(f); got != "first" {
		t.Errorf("the registered factory is %q, want the first one", got)
	}
	// Names are case-sensitive: "X" is another name.
	if err := r.Register("X", factory("upper")); err != nil {
		t.Errorf(`Register("X"): %v`, err)
	}
}

func TestRegistryLookupAndNames(t *testing.T) {
	r := extensions.NewRegistry()
	if got := r.Names(); got == nil || len(got) != 0 {
		t.Errorf("Names() of an empty registry = %#v, want an empty non-nil slice", got)
	}
	for _, n := range []string{"zeta", "audit", "Beta", "alpha.v2", "alpha", "_x", "9"} {
		if err := r.Register(n, factory(n)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"9", "Beta", "_x", "alpha", "alpha.v2", "audit", "zeta"}
	if got := r.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	// Names returns a copy.
	r.Names()[0] = "changed"
	if got := r.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() after changing a returned slice = %q, want %q", got, want)
	}

	tests := []struct {
		name, lookup string
		found        bool
	}{
		{"registered", "audit", true},
		{"registered with a dot", "alpha.v2", true},
		{"unknown", "approval", false},
		{"other case", "AUDIT", false},
		{"empty", "", false},
		{"invalid", "a b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := r.Lookup(tt.lookup)
			if ok != tt.found {
				t.Fatalf("Lookup(%q) found = %v, want %v", tt.lookup, ok, tt.found)
			}
			if !ok {
				if f != nil {
					t.Errorf("Lookup(%q) returned a factory with found = false", tt.lookup)
				}
				return
			}
			if got := identify(f); got != tt.lookup {
				t.Errorf("Lookup(%q) returned the factory of %q", tt.lookup, got)
			}
		})
	}
}

func TestRegistryMerge(t *testing.T) {
	tests := []struct {
		name  string
		r     []string // names registered in r, each with factory "r:<name>"
		other []string // names registered in other, each with factory "other:<name>"
		nil   bool     // merge a nil registry instead of other
		self  bool     // merge r into itself
		want  map[string]string
	}{
		{name: "adds new entries", r: []string{"a"}, other: []string{"b", "c"},
			want: map[string]string{"a": "r:a", "b": "other:b", "c": "other:c"}},
		{name: "keeps existing entries", r: []string{"a", "b"}, other: []string{"b", "c"},
			want: map[string]string{"a": "r:a", "b": "r:b", "c": "other:c"}},
		{name: "into empty", other: []string{"a", "b"},
			want: map[string]string{"a": "other:a", "b": "other:b"}},
		{name: "from empty", r: []string{"a"},
			want: map[string]string{"a": "r:a"}},
		{name: "nil", r: []string{"a"}, nil: true,
			want: map[string]string{"a": "r:a"}},
		{name: "itself", r: []string{"a", "b"}, self: true,
			want: map[string]string{"a": "r:a", "b": "r:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, other := extensions.NewRegistry(), extensions.NewRegistry()
			for _, n := range tt.r {
				if err := r.Register(n, factory("r:"+n)); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range tt.other {
				if err := other.Register(n, factory("other:"+n)); err != nil {
					t.Fatal(err)
				}
			}
			switch {
			case tt.nil:
				r.Merge(nil)
			case tt.self:
				r.Merge(r)
			default:
				r.Merge(other)
			}
			got := map[string]string{}
			for _, n := range r.Names() {
				f, ok := r.Lookup(n)
				if !ok {
					t.Fatalf("Lookup(%q) not found, but Names lists it", n)
				}
				got[n] = identify(f)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("after Merge: %v, want %v", got, tt.want)
			}
			// other is left as it was.
			if names := other.Names(); !slices.Equal(names, slices.Sorted(slices.Values(tt.other))) {
				t.Errorf("other.Names() = %q after Merge, want %q", names, tt.other)
			}
			// A name merged in is taken: registering it again fails.
			for n := range tt.want {
				checkErr(t, r.Register(n, factory("again")), fmt.Sprintf("extension %q is already registered", n))
			}
		})
	}
}

// TestRegistryConcurrent hammers one registry from many goroutines; run it
// with -race.
func TestRegistryConcurrent(t *testing.T) {
	const workers, perWorker = 8, 50
	r := extensions.NewRegistry()
	src := extensions.NewRegistry()
	for i := range perWorker {
		if err := src.Register("merged"+strconv.Itoa(i), factory("src")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d.%d", w, i)
				if err := r.Register(name, factory(name)); err != nil {
					t.Errorf("Register(%q): %v", name, err)
				}
				// Every worker also races for one shared name: exactly one wins.
				_ = r.Register("shared", factory("shared"))
				if f, ok := r.Lookup(name); !ok || identify(f) != name {
					t.Errorf("Lookup(%q) right after Register: found = %v", name, ok)
				}
				r.Lookup("shared")
				r.Names()
				if i%10 == 0 {
					r.Merge(src)
				}
			}
		})
	}
	wg.Wait()
	names := r.Names()
	if want := workers*perWorker + 1 + perWorker; len(names) != want {
		t.Errorf("len(Names()) = %d, want %d", len(names), want)
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() is not sorted")
	}
	if f, ok := r.Lookup("shared"); !ok || identify(f) != "shared" {
		t.Errorf(`Lookup("shared") = %v`, ok)
	}
}

// TestRegistryMergeBothWays: merging two registries into each other at the
// same time must not deadlock.
func TestRegistryMergeBothWays(t *testing.T) {
	a, b := extensions.NewRegistry(), extensions.NewRegistry()
	f := func(extensions.Config) (extensions.Extension, error) { return nil, nil }
	_ = a.Register("from-a", f)
	_ = b.Register("from-b", f)
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() { a.Merge(b) })
		wg.Go(func() { b.Merge(a) })
	}
	wg.Wait()
	if got := strings.Join(a.Names(), ","); got != "from-a,from-b" {
		t.Errorf("a = %s", got)
	}
	if got := strings.Join(b.Names(), ","); got != "from-a,from-b" {
		t.Errorf("b = %s", got)
	}
	var zero extensions.Registry // ready to use
	if err := zero.Register("z", f); err != nil {
		t.Fatal(err)
	}
	zero.Merge(a)
	if got := strings.Join(zero.Names(), ","); got != "from-a,from-b,z" {
		t.Errorf("zero registry = %s", got)
	}
}
