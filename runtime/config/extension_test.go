package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// auditConfig is an extension's config type.
type auditConfig struct {
	Limit   int           `yaml:"limit"`
	Labels  []string      `yaml:"labels"`
	Timeout time.Duration `yaml:"timeout"`
	Rules   []struct {
		Tool string `yaml:"tool"`
		Deny bool   `yaml:"deny"`
	} `yaml:"rules"`
	Extra map[string]int `yaml:"extra"`
}

const extensionFile = `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        config:
          limit: 3
          labels: [a, b]
          timeout: 5s
          rules:
            - tool: execute_command
              deny: true
          extra: {x: 1}
      - name: approval
        config:
          limit: lots
          labels: [a, b]
      - name: strict
        config:
          limit: 3
          lables: [a, b]
      - name: empty
      - name: null_config
        config:
      - name: shared
        config: &shared
          limit: 7
      - name: alias
        config: *shared
      - name: nested
        config:
          rules:
            - tool: read_file
              deny: maybe
          extra: {x: one}
      - name: scalar
        config: 12
`

func TestExtensionDecode(t *testing.T) {
	f := mustParse(t, extensionFile)
	exts := map[string]config.Extension{}
	for _, e := range f.Agents[0].Extensions {
		exts[e.Name] = e
	}
	tests := []struct {
		name string
		want auditConfig
		// errs are the headers of the errors, if Decode fails.
		errs []string
	}{
		{name: "audit", want: auditConfig{
			Limit:   3,
			Labels:  []string{"a", "b"},
			Timeout: 5 * time.Second,
			Rules: []struct {
				Tool string `yaml:"tool"`
				Deny bool   `yaml:"deny"`
			}{{Tool: "execute_command", Deny: true}},
			Extra: map[string]int{"x": 1},
		}},
		{name: "approval", errs: []string{
			`ganglion.yaml:16:18: agent "assistant": extension "approval": config.limit: expected an integer, found string "lots"`,
		}},
		{name: "strict", errs: []string{
			`ganglion.yaml:21:11: agent "assistant": extension "strict": config: unknown field "lables" (known: extra, labels, limit, rules, timeout)`,
		}},
		{name: "empty"},
		{name: "null_config"},
		{name: "shared", want: auditConfig{Limit: 7}},
		{name: "alias", want: auditConfig{Limit: 7}},
		{name: "nested", errs: []string{
			`ganglion.yaml:34:21: agent "assistant": extension "nested": config.rules[0].deny: expected true or false, found string "maybe"`,
			`ganglion.yaml:35:22: agent "assistant": extension "nested": config.extra.x: expected an integer, found string "one"`,
		}},
		{name: "scalar", errs: []string{
			`ganglion.yaml:37:17: agent "assistant": extension "scalar": config: expected a mapping, found integer 12`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := exts[tt.name]
			if !ok {
				t.Fatalf("no extension %q", tt.name)
			}
			var got auditConfig
			err := e.Decode(&got)
			if tt.errs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			list := errorList(t, err)
			if lines := firstLines(list); !reflect.DeepEqual(lines, tt.errs) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tt.errs, "\n"))
			}
			golden(t, "decode_"+tt.name, err.Error())
		})
	}
}

// level decodes itself from a word or a number.
type level int

func (l *level) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if err := unmarshal(&word); err == nil {
		switch word {
		case "low":
			*l = 1
			return nil
		case "high":
			*l = 9
			return nil
		}
	}
	var n int
	if err := unmarshal(&n); err != nil {
		return err
	}
	*l = level(n)
	return nil
}

// TestExtensionDecodeSelfDecoding checks the errors of types that decode
// themselves: they carry no position of their own, so Decode puts them at
// the value.
func TestExtensionDecodeSelfDecoding(t *testing.T) {
	f := mustParse(t, `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        config:
          timeout: soon
          level: [1]
      - name: ok
        config:
          timeout: 1m
          level: high
`)
	type settings struct {
		Timeout time.Duration `yaml:"timeout"`
		Level   level         `yaml:"level"`
	}
	var c settings
	err := f.Agents[0].Extensions[0].Decode(&c)
	list := errorList(t, err)
	want := []string{
		`ganglion.yaml:7:20: agent "assistant": extension "audit": config.timeout: time: invalid duration "soon"`,
		`ganglion.yaml:8:18: agent "assistant": extension "audit": config.level: cannot unmarshal []interface {} into Go value of type int`,
	}
	if got := firstLines(list); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range list {
		if e.Unwrap() == nil {
			t.Errorf("%q: Unwrap() = nil, want the library's error", e.Msg)
		}
	}
	golden(t, "decode_self_decoding", err.Error())

	if err := f.Agents[0].Extensions[1].Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Timeout != time.Minute || c.Level != 9 {
		t.Errorf("got %+v, want 1m and level 9", c)
	}
}

func TestExtensionDecodeNotPointer(t *testing.T) {
	f := mustParse(t, extensionFile)
	var c auditConfig
	for _, v := range []any{c, nil, (*auditConfig)(nil)} {
		if err := f.Agents[0].Extensions[0].Decode(v); err == nil {
			t.Errorf("Decode(%T) succeeded, want an error", v)
		}
	}
}

func TestExtensionDecodeNilConfig(t *testing.T) {
	var c auditConfig
	if err := (config.Extension{Name: "x"}).Decode(&c); err != nil {
		t.Fatal(err)
	}
}

// TestExtensionErrorAt: a problem an extension finds at a path of its
// config is positioned at that value in the file (or at the nearest
// enclosing one the file shows), and named as Decode names its problems.
func TestExtensionErrorAt(t *testing.T) {
	f := mustParse(t, extensionFile)
	audit, nested := f.Agents[0].Extensions[0], f.Agents[0].Extensions[7]
	tests := []struct {
		name string
		ext  config.Extension
		path string
		want string
	}{
		{"a value", audit, "$.limit", `ganglion.yaml:7:18: agent "assistant": extension "audit": config.limit: too low`},
		{"a list element", audit, "$.labels[1]", `ganglion.yaml:8:23: agent "assistant": extension "audit": config.labels[1]: too low`},
		{"deep", nested, "$.rules[0].deny", `ganglion.yaml:34:21: agent "assistant": extension "nested": config.rules[0].deny: too low`},
		{"the section", audit, "$", `ganglion.yaml:7:11: agent "assistant": extension "audit": config: too low`},
		{"not in the file: its parent", audit, "$.labels[9]", `ganglion.yaml:8:19: agent "assistant": extension "audit": config.labels[9]: too low`},
		{"no path", audit, "limit", `ganglion.yaml:7:11: agent "assistant": extension "audit": config: too low`},
		{"an extension without a config", f.Agents[0].Extensions[3], "$.x", `ganglion.yaml:22:9: agent "assistant": extension "empty": config.x: too low`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ext.ErrorAt(tt.path, "too low")
			list := errorList(t, err)
			if got := firstLines(list)[0]; got != tt.want {
				t.Errorf("ErrorAt(%q)\n got %s\nwant %s", tt.path, got, tt.want)
			}
		})
	}
	// Built in code: no file, the path only.
	err := (config.Extension{Name: "x"}).ErrorAt("$.a", "too low")
	if err == nil || err.Error() != `extension "x": config.a: too low` {
		t.Errorf("ErrorAt without a file = %v", err)
	}
}
