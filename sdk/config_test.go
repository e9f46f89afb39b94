package ganglion

import (
	"bytes"
	"encoding/json"
	"testing"
)

type configInner struct {
	Max  int     `json:"max"`
	Rate float64 `json:"rate"`
}

type configEmbedded struct {
	Shared string `json:"shared"`
}

type configTest struct {
	configEmbedded
	Block   []string               `json:"block"`
	Limits  configInner            `json:"limits"`
	List    []configInner          `json:"list"`
	Named   map[string]configInner `json:"named"`
	Count   uint8                  `json:"count"`
	On      *bool                  `json:"on"`
	Any     any                    `json:"any"`
	Raw     json.RawMessage        `json:"raw"`
	Skipped string                 `json:"-"`
	Plain   string
}

// TestConfigProblem: a config that does not fit is reported at its place,
// in the host's words; one that fits has no problem.
func TestConfigProblem(t *testing.T) {
	tests := []struct {
		name, json string
		want       string // the error's text; "" for none
	}{
		{"fits", `{"block":["a"],"limits":{"max":3,"rate":0.5},"list":[{"max":1}],"named":{"x":{"max":2}},"count":7,"on":true,"any":{"x":[1]},"raw":{"y":1},"shared":"s","Plain":"p"}`, ""},
		{"null values fit", `{"block":null,"limits":null,"on":null}`, ""},
		{"keys match case-insensitively", `{"BLOCK":["a"],"plain":"p"}`, ""},
		{"unknown key", `{"block":["a"],"word":1}`, `config: $.word: unknown field "word" (known: Plain, any, block, count, limits, list, named, on, raw, shared)`},
		{"unknown nested key", `{"limits":{"max":1,"mx":2}}`, `config: $.limits.mx: unknown field "mx" (known: max, rate)`},
		{"a list element", `{"block":["a",2]}`, `config: $.block[1]: expected a string, found integer 2`},
		{"deep in a list", `{"list":[{"max":1},{"max":"y"}]}`, `config: $.list[1].max: expected an integer, found string "y"`},
		{"a map value", `{"named":{"odd key":{"rate":"fast"}}}`, `config: $.named["odd key"].rate: expected a number, found string "fast"`},
		{"a fraction for an integer", `{"limits":{"max":2.5}}`, `config: $.limits.max: expected an integer, found number 2.5`},
		{"out of range", `{"count":300}`, `config: $.count: expected a non-negative integer, found integer 300`},
		{"a negative count", `{"count":-1}`, `config: $.count: expected a non-negative integer, found integer -1`},
		{"a mapping for a list", `{"block":{"a":1}}`, `config: $.block: expected a list, found a mapping`},
		{"a list for a mapping", `{"limits":[1]}`, `config: $.limits: expected a mapping, found a list`},
		{"a string for a boolean", `{"on":"yes"}`, `config: $.on: expected true or false, found string "yes"`},
		{"the section itself", `[1]`, `config: $: expected a mapping, found a list`},
		{"an ignored field is unknown", `{"Skipped":"x"}`, `config: $.Skipped: unknown field "Skipped" (known: Plain, any, block, count, limits, list, named, on, raw, shared)`},
		{"malformed JSON is not its to report", `{"block":`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c configTest
			p := configProblem([]byte(tt.json), &c)
			got := ""
			if p != nil {
				got = p.Error()
			}
			if got != tt.want {
				t.Errorf("configProblem(%s)\n got %s\nwant %s", tt.json, got, tt.want)
			}
		})
	}
}

// FuzzConfigProblem: on any input configProblem does not panic, and on
// valid JSON it finds a problem exactly when strict decoding fails.
func FuzzConfigProblem(f *testing.F) {
	for _, s := range []string{`{}`, `{"block":["a",2]}`, `{"limits":{"max":2.5}}`, `{"named":{"k":{"rate":"x"}}}`, `{"word":1}`, `[1]`, `null`, `{"count":300}`, `{"BLOCK":["a"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c configTest
		p := configProblem([]byte(s), &c)
		if !json.Valid([]byte(s)) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.DisallowUnknownFields()
		var d configTest
		err := dec.Decode(&d)
		if (p != nil) != (err != nil) {
			t.Errorf("%s: configProblem = %v, strict decoding = %v", s, p, err)
		}
	})
}
