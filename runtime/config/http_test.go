package config_test

import (
	"reflect"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestHTTPGrants: an extension's http: grants, as origins alone or with
// methods, and the errors of bad ones, at their place in the file.
func TestHTTPGrants(t *testing.T) {
	f := mustParse(t, `model: {provider: scripted, script: s.yaml}
agents:
  - name: assistant
    extensions:
      - wasm: mod.wasm
        http:
          - https://moderation.example.com
          - origin: http://127.0.0.1:8080
            methods: [POST]
`)
	if err := f.Validate(known); err != nil {
		t.Fatal(err)
	}
	want := []config.HTTPGrant{{Origin: "https://moderation.example.com"}, {Origin: "http://127.0.0.1:8080", Methods: []string{"POST"}}}
	if got := f.Agents[0].Extensions[0].HTTP; !reflect.DeepEqual(got, want) {
		t.Errorf("grants = %+v, want %+v", got, want)
	}
	for _, tt := range []struct{ name, ext, first string }{
		{"not an origin", `{wasm: m.wasm, http: ["https://x.example/path"]}`,
			`ganglion.yaml:4:40: agent "assistant": extension "m": http: "https://x.example/path" is not an origin: want scheme://host[:port], with scheme http or https`},
		{"scheme", `{wasm: m.wasm, http: ["ftp://x.example"]}`,
			`ganglion.yaml:4:40: agent "assistant": extension "m": http: "ftp://x.example" is not an origin: want scheme://host[:port], with scheme http or https`},
		{"twice", `{wasm: m.wasm, http: ["https://x.example", "HTTPS://X.example:443"]}`,
			`ganglion.yaml:4:61: agent "assistant": extension "m": http: origin https://x.example is granted twice (first at line 4); merge their methods`},
		{"method", `{wasm: m.wasm, http: [{origin: "https://x.example", methods: [post]}]}`,
			`ganglion.yaml:4:80: agent "assistant": extension "m": http: method "post": want one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`},
		{"native", `{name: audit, http: ["https://x.example"]}`,
			`ganglion.yaml:4:38: agent "assistant": extension "audit": http: only a WebAssembly extension (wasm:) is granted origins; a native one calls out through its API's HTTP`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, "model: {provider: scripted, script: s.yaml}\nagents:\n  - name: assistant\n    extensions: ["+tt.ext+"]\n")
			list := errorList(t, f.Validate(known))
			if got := firstLines(list)[0]; got != tt.first {
				t.Errorf("first error:\ngot  %s\nwant %s", got, tt.first)
			}
		})
	}
}
