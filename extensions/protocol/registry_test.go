package protocol_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

func TestDefaultRegistry(t *testing.T) {
	r := protocol.DefaultRegistry()
	if got, want := r.Names(), []string{"DEPENDENCY_REQUEST", "PHASE_COMPLETE", "USER_QUESTION"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	k, ok := r.Lookup(protocol.KindPhaseComplete)
	if !ok {
		t.Fatal("PHASE_COMPLETE not registered")
	}
	want := []protocol.FieldSpec{
		{Name: "phase", Type: protocol.TextField, Required: true},
		{Name: "summary", Type: protocol.TextField, Required: true},
		{Name: "artifacts", Type: protocol.ListField},
	}
	if !slices.Equal(k.Fields, want) {
		t.Errorf("fields %+v, want %+v", k.Fields, want)
	}
	k.Fields[0].Name = "changed" // Lookup returns a copy
	if k2, _ := r.Lookup(protocol.KindPhaseComplete); k2.Fields[0].Name != "phase" {
		t.Error("Lookup shares its fields with the registry")
	}
	if _, ok := r.Lookup("NOPE"); ok {
		t.Error("Lookup(NOPE) found a kind")
	}
	// Each call returns a new registry.
	if err := r.Register(protocol.Kind{Name: "EXTRA"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := protocol.DefaultRegistry().Lookup("EXTRA"); ok {
		t.Error("a kind registered in one default registry shows in another")
	}
}

func TestRegister(t *testing.T) {
	text := func(name string) protocol.FieldSpec { return protocol.FieldSpec{Name: name, Type: protocol.TextField} }
	tests := []struct {
		name string
		kind protocol.Kind
		want string // error, "" for none
	}{
		{"valid", protocol.Kind{Name: "TASK_2", Fields: []protocol.FieldSpec{text("title"), text("_x9")}}, ""},
		{"no fields", protocol.Kind{Name: "PING"}, ""},
		{"64 characters", protocol.Kind{Name: "A" + strings.Repeat("B", 63)}, ""},
		{"duplicate", protocol.Kind{Name: "USER_QUESTION"}, `register kind "USER_QUESTION": already registered`},
		{"empty name", protocol.Kind{}, `register kind "": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"lowercase", protocol.Kind{Name: "task"}, `register kind "task": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"leading digit", protocol.Kind{Name: "1TASK"}, `register kind "1TASK": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"leading underscore", protocol.Kind{Name: "_TASK"}, `register kind "_TASK": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"slash", protocol.Kind{Name: "/TASK"}, `register kind "/TASK": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"65 characters", protocol.Kind{Name: "A" + strings.Repeat("B", 64)}, `register kind "A` + strings.Repeat("B", 64) + `": name must match [A-Z][A-Z0-9_]* and be at most 64 characters`},
		{"bad field name", protocol.Kind{Name: "T1", Fields: []protocol.FieldSpec{text("Title")}}, `register kind "T1": field "Title": name must match [a-z_][a-z0-9_]*`},
		{"empty field name", protocol.Kind{Name: "T2", Fields: []protocol.FieldSpec{text("")}}, `register kind "T2": field "": name must match [a-z_][a-z0-9_]*`},
		{"bad field type", protocol.Kind{Name: "T3", Fields: []protocol.FieldSpec{{Name: "a"}}}, `register kind "T3": field "a": unknown type FieldType(0)`},
		{"duplicate field", protocol.Kind{Name: "T4", Fields: []protocol.FieldSpec{text("a"), text("a")}}, `register kind "T4": field "a": declared twice`},
	}
	r := protocol.DefaultRegistry()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Register(tt.kind)
			if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
				t.Errorf("Register() = %v, want %q", err, tt.want)
			}
			_, registered := r.Lookup(tt.kind.Name)
			if tt.want != "" && registered && tt.kind.Name != protocol.KindUserQuestion {
				t.Error("a refused kind was registered")
			}
		})
	}
}

func TestRegisterCopiesFields(t *testing.T) {
	r := new(protocol.Registry)
	fields := []protocol.FieldSpec{{Name: "a", Type: protocol.TextField, Required: true}}
	if err := r.Register(protocol.Kind{Name: "K", Fields: fields}); err != nil {
		t.Fatal(err)
	}
	fields[0].Name = "b"
	if _, errs := protocol.Parse(r, "[K]\na: x\n[/K]\n"); len(errs) != 0 {
		t.Errorf("changing the caller's slice changed the kind: %v", errs)
	}
}

func TestZeroRegistry(t *testing.T) {
	var r protocol.Registry
	if blocks, errs := protocol.Parse(&r, "[USER_QUESTION]\n[/USER_QUESTION]\n"); len(blocks)+len(errs) != 0 {
		t.Errorf("empty registry found %v %v", blocks, errs)
	}
	if err := r.Register(protocol.Kind{Name: "K"}); err != nil {
		t.Fatal(err)
	}
	if blocks, _ := protocol.Parse(&r, "[K]\n[/K]\n"); len(blocks) != 1 {
		t.Errorf("got %d blocks", len(blocks))
	}
}

func TestFieldTypeString(t *testing.T) {
	for ft, want := range map[protocol.FieldType]string{protocol.TextField: "text", protocol.BoolField: "bool", protocol.ListField: "list", 9: "FieldType(9)"} {
		if got := ft.String(); got != want {
			t.Errorf("%d: %q, want %q", ft, got, want)
		}
	}
}

// TestRegistryConcurrent registers kinds while scanners are created and
// used, for the race detector.
func TestRegistryConcurrent(t *testing.T) {
	r := protocol.DefaultRegistry()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			for j := range 20 {
				if err := r.Register(protocol.Kind{Name: fmt.Sprintf("K_%d_%d", i, j)}); err != nil {
					errs <- err
				}
				// Everyone races to register the same name: one wins.
				_ = r.Register(protocol.Kind{Name: fmt.Sprintf("SHARED_%d", j)})
			}
		})
		wg.Go(func() {
			for range 20 {
				s := protocol.NewScanner(r)
				s.Feed(validQ)
				if evs := s.Close(); len(evs) != 0 {
					errs <- fmt.Errorf("events after Close: %v", evs)
				}
				r.Names()
				r.Lookup("SHARED_1")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(r.Names()); got != 3+n*20+20 {
		t.Errorf("%d kinds registered, want %d", got, 3+n*20+20)
	}
}
