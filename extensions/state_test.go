package extensions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/store"
)

// stateAPI returns the API of extension ext for agent on st.
func stateAPI(st store.Store, agent, ext string) *extensions.API {
	return extensions.NewAPI(ext, extensions.Host{Agent: agent, Store: st})
}

func TestStateGetSet(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	s := stateAPI(st, "a", "x").State

	got, err := s.Get(ctx, "i")
	if err != nil || got != nil {
		t.Fatalf("Get of nothing = %q, %v; want nil, nil", got, err)
	}
	for _, v := range []string{`{"n":1}`, `[1,2,3]`, `"text"`, `null`, `42`, ` { "spaced" : true } `} {
		if err := s.Set(ctx, "i", json.RawMessage(v)); err != nil {
			t.Fatalf("Set(%s): %v", v, err)
		}
		got, err := s.Get(ctx, "i")
		if err != nil || string(got) != v {
			t.Errorf("Get after Set(%s) = %q, %v", v, got, err)
		}
	}

	// The state does not alias the caller's buffer, in either direction.
	buf := []byte(`{"n":1}`)
	if err := s.Set(ctx, "i", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"n":2}`)
	got, _ = s.Get(ctx, "i")
	if string(got) != `{"n":1}` {
		t.Errorf("state changed with the caller's buffer: %s", got)
	}
	copy(got, `{"n":3}`)
	if again, _ := s.Get(ctx, "i"); string(again) != `{"n":1}` {
		t.Errorf("state changed with a returned buffer: %s", again)
	}

	// nil deletes.
	if err := s.Set(ctx, "i", nil); err != nil {
		t.Fatalf("Set(nil): %v", err)
	}
	if got, err := s.Get(ctx, "i"); err != nil || got != nil {
		t.Errorf("Get after Set(nil) = %q, %v; want nil, nil", got, err)
	}
	if keys, err := st.Instances(ctx, "a"); err != nil || len(keys) != 0 {
		t.Errorf("Instances after the state was deleted = %q, %v; want none", keys, err)
	}
	// Deleting nothing is fine.
	if err := s.Set(ctx, "never", nil); err != nil {
		t.Errorf("Set(nil) of no state: %v", err)
	}
}

func TestStateSetErrors(t *testing.T) {
	ctx := context.Background()
	atLimit := `"` + strings.Repeat("a", extensions.MaxStateSize-2) + `"`
	tests := []struct {
		name  string
		value json.RawMessage
		want  string
	}{
		{name: "at the limit", value: json.RawMessage(atLimit)},
		{name: "one byte over the limit", value: json.RawMessage(atLimit + " "),
			want: `extension "x": set state: 1048577 bytes is over the limit of 1048576`},
		{name: "invalid and over the limit", value: make(json.RawMessage, 2*extensions.MaxStateSize),
			want: `extension "x": set state: 2097152 bytes is over the limit of 1048576`},
		{name: "truncated object", value: json.RawMessage(`{"n":`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "bare word", value: json.RawMessage(`hello`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "two values", value: json.RawMessage(`{} {}`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "empty", value: json.RawMessage{},
			want: `extension "x": set state: value is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory()
			defer st.Close()
			s := stateAPI(st, "a", "x").State
			if err := s.Set(ctx, "i", json.RawMessage(`{"kept":true}`)); err != nil {
				t.Fatal(err)
			}
			checkErr(t, s.Set(ctx, "i", tt.value), tt.want)
			got, err := s.Get(ctx, "i")
			if err != nil {
				t.Fatal(err)
			}
			want := `{"kept":true}`
			if tt.want == "" {
				want = string(tt.value)
			}
			if string(got) != want {
				t.Errorf("state after Set = %.40q, want %.40q", got, want)
			}
		})
	}
}

func TestStateLoadSave(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	s := stateAPI(st, "a", "x").State

	type counts struct {
		Turns int      `json:"turns"`
		Tags  []string `json:"tags,omitempty"`
	}
	v := counts{Turns: -1}
	found, err := s.Load(ctx, "i", &v)
	if err != nil || found || v.Turns != -1 {
		t.Fatalf("Load of nothing = %v, %v, %+v; want false, nil and v untouched", found, err, v)
	}
	if err := s.Save(ctx, "i", counts{Turns: 3, Tags: []string{"a"}}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	raw, _ := s.Get(ctx, "i")
	if string(raw) != `{"turns":3,"tags":["a"]}` {
		t.Errorf("saved state = %s", raw)
	}
	var got counts
	found, err = s.Load(ctx, "i", &got)
	if err != nil || !found || got.Turns != 3 || !slices.Equal(got.Tags, []string{"a"}) {
		t.Errorf("Load = %v, %v, %+v", found, err, got)
	}
	// Set and Load meet: state written raw decodes into the struct.
	if err := s.Set(ctx, "i", json.RawMessage(`{"turns":7,"extra":1}`)); err != nil {
		t.Fatal(err)
	}
	got = counts{}
	if found, err := s.Load(ctx, "i", &got); err != nil || !found || got.Turns != 7 {
		t.Errorf("Load after Set = %v, %v, %+v", found, err, got)
	}
}

func TestStateLoadSaveErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		stored []byte // put straight through the store, bypassing Set
		do     func(s *extensions.State) error
		want   string
		found  bool
	}{
		{name: "load garbage", stored: []byte("garbage"), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: invalid character 'g' looking for beginning of value`},
		{name: "load the wrong type", stored: []byte(`{"N":"seven"}`), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: json: cannot unmarshal string into Go struct field .N of type int`},
		{name: "load empty", stored: []byte{}, found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: unexpected end of JSON input`},
		{name: "load into a non-pointer", stored: []byte(`{}`), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", v)
				return err
			},
			want: `extension "x": decode state: json: Unmarshal(non-pointer struct { N int })`},
		{name: "save a channel",
			do:   func(s *extensions.State) error { return s.Save(ctx, "i", make(chan int)) },
			want: `extension "x": encode state: json: unsupported type: chan int`},
		{name: "save over the limit",
			do:   func(s *extensions.State) error { return s.Save(ctx, "i", strings.Repeat("a", extensions.MaxStateSize)) },
			want: `extension "x": set state: 1048578 bytes is over the limit of 1048576`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory()
			defer st.Close()
			if tt.stored != nil {
				if err := st.SetState(ctx, "a", "i", "x", tt.stored); err != nil {
					t.Fatal(err)
				}
			}
			s := stateAPI(st, "a", "x").State
			checkErr(t, tt.do(s), tt.want)
			// Load reports that there was state even when it cannot decode it.
			var v any
			found, _ := s.Load(ctx, "i", &v)
			if found != tt.found {
				t.Errorf("found = %v, want %v", found, tt.found)
			}
		})
	}
}

func TestStateDecodeErrorUnwraps(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	if err := st.SetState(ctx, "a", "i", "x", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	_, err := stateAPI(st, "a", "x").State.Load(ctx, "i", &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) || se.Offset != 1 {
		t.Errorf("errors.As(%v, *json.SyntaxError) = false or wrong offset", err)
	}
}

func TestStateIsolation(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	type slot struct{ agent, ext, instance string }
	slots := []slot{
		{"a", "x", "i1"},
		{"a", "x", "i2"}, // another instance
		{"a", "y", "i1"}, // another extension
		{"b", "x", "i1"}, // another agent
		{"b", "y", "i2"},
	}
	for n, sl := range slots {
		v := fmt.Sprintf(`{"slot":%d}`, n)
		if err := stateAPI(st, sl.agent, sl.ext).State.Set(ctx, sl.instance, json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	for n, sl := range slots {
		t.Run(fmt.Sprintf("%s/%s/%s", sl.agent, sl.ext, sl.instance), func(t *testing.T) {
			// A second API of the same agent and extension sees the same state.
			got, err := stateAPI(st, sl.agent, sl.ext).State.Get(ctx, sl.instance)
			if want := fmt.Sprintf(`{"slot":%d}`, n); err != nil || string(got) != want {
				t.Errorf("Get = %s, %v; want %s", got, err, want)
			}
		})
	}
	// Deleting one slot leaves the others.
	if err := stateAPI(st, "a", "x").State.Set(ctx, "i1", nil); err != nil {
		t.Fatal(err)
	}
	for n, sl := range slots {
		got, _ := stateAPI(st, sl.agent, sl.ext).State.Get(ctx, sl.instance)
		want := fmt.Sprintf(`{"slot":%d}`, n)
		if n == 0 {
			want = ""
		}
		if string(got) != want {
			t.Errorf("%v after deleting slot 0: %s, want %q", sl, got, want)
		}
	}
	// The state is the store's: the runtime reads it under the extension's name.
	if got, _ := st.GetState(ctx, "b", "i2", "y"); string(got) != `{"slot":4}` {
		t.Errorf("store.GetState = %s", got)
	}
}

func TestStateStoreErrors(t *testing.T) {
	closed := store.NewMemory()
	closed.Close()
	open := store.NewMemory()
	defer open.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()

	type op struct {
		name string
		do   func(ctx context.Context, s *extensions.State, key string) error
		verb string // the prefix of the error
	}
	ops := []op{
		{"Get", func(ctx context.Context, s *extensions.State, key string) error {
			_, err := s.Get(ctx, key)
			return err
		}, "get state"},
		{"Set", func(ctx context.Context, s *extensions.State, key string) error {
			return s.Set(ctx, key, json.RawMessage(`{}`))
		}, "set state"},
		{"Set nil", func(ctx context.Context, s *extensions.State, key string) error { return s.Set(ctx, key, nil) }, "set state"},
		{"Load", func(ctx context.Context, s *extensions.State, key string) error {
			var v any
			_, err := s.Load(ctx, key, &v)
			return err
		}, "get state"},
		{"Save", func(ctx context.Context, s *extensions.State, key string) error { return s.Save(ctx, key, 1) }, "set state"},
	}
	tests := []struct {
		name   string
		st     store.Store
		ctx    context.Context
		agent  string
		ext    string
		key    string
		cause  string
		wantIs error
	}{
		{name: "closed store", st: closed, ctx: ctx, agent: "a", ext: "x", key: "i",
			cause: "store: closed", wantIs: store.ErrClosed},
		{name: "cancelled context", st: open, ctx: cancelled, agent: "a", ext: "x", key: "i",
			cause: "context canceled", wantIs: context.Canceled},
		{name: "empty instance key", st: open, ctx: ctx, agent: "a", ext: "x", key: "",
			cause:  `store: invalid instance key "": empty (want 1 to 256 bytes of UTF-8 without NUL)`,
			wantIs: store.ErrInvalidName},
		{name: "invalid extension name", st: open, ctx: ctx, agent: "a", ext: "my ext", key: "i",
			cause:  `store: invalid extension name "my ext": character " " at offset 2 not allowed (want [a-zA-Z0-9_.-]{1,64})`,
			wantIs: store.ErrInvalidName},
	}
	for _, tt := range tests {
		for _, o := range ops {
			t.Run(tt.name+"/"+o.name, func(t *testing.T) {
				s := stateAPI(tt.st, tt.agent, tt.ext).State
				err := o.do(tt.ctx, s, tt.key)
				checkErr(t, err, fmt.Sprintf("extension %q: %s: %s", tt.ext, o.verb, tt.cause))
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
				}
			})
		}
	}
}

// TestStateRefusesInvalidUTF8: encoding/json's Valid accepts invalid UTF-8
// inside strings; state must not store it.
func TestStateRefusesInvalidUTF8(t *testing.T) {
	st := store.NewMemory()
	api := extensions.NewAPI("x", extensions.Host{Agent: "a", Store: st})
	ctx := context.Background()
	if err := api.State.Set(ctx, "i", json.RawMessage(`{"kept":true}`)); err != nil {
		t.Fatal(err)
	}
	err := api.State.Set(ctx, "i", json.RawMessage("\"\xff\""))
	if err == nil || err.Error() != `extension "x": set state: value is not valid JSON` {
		t.Fatalf("err = %v", err)
	}
	got, _ := api.State.Get(ctx, "i")
	if string(got) != `{"kept":true}` {
		t.Fatalf("state after the refused Set = %q", got)
	}
}
