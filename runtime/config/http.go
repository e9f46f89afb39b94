package config

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// HTTPGrant lets a WebAssembly extension call one origin: a string (the
// origin, every method) or a mapping with origin and methods.
type HTTPGrant struct {
	// Origin is scheme://host[:port], http or https.
	Origin string `yaml:"origin"`
	// Methods are the methods allowed, upper case; none allows all.
	Methods []string `yaml:"methods"`
}

// decodeHTTPGrant decodes an http: grant from its YAML text b: an origin,
// the short form of {origin: o}, or a mapping. The checker has checked
// its shape, which shortForms allows.
func decodeHTTPGrant(g *HTTPGrant, b []byte) error {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return err
	}
	if o, ok := v.(string); ok {
		*g = HTTPGrant{Origin: o}
		return nil
	}
	type plain HTTPGrant // without this decoder
	return yaml.UnmarshalWithOptions(b, (*plain)(g), yaml.DisallowUnknownField())
}

// httpMethods are the methods a grant may name.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// httpGrants checks the http: grants of extension e at path.
func (v *validator) httpGrants(e *Extension, path, pre string) {
	if len(e.HTTP) > 0 && e.Wasm == "" {
		v.errorf(path+".http", "%shttp: only a WebAssembly extension (wasm:) is granted origins; a native one calls out through its API's HTTP", pre)
		return
	}
	seen := map[string]int{}
	for k, g := range e.HTTP {
		at := path + ".http[" + strconv.Itoa(k) + "]"
		o, ok := canonicalOrigin(g.Origin)
		if !ok {
			v.errorf(at, "%shttp: %q is not an origin: want scheme://host[:port], with scheme http or https", pre, g.Origin)
			continue
		}
		if k0, dup := seen[o]; dup {
			v.errorf(at, "%shttp: origin %s is granted twice (first at %s); merge their methods", pre, o, v.firstAt(path+".http["+strconv.Itoa(k0)+"]"))
		}
		seen[o] = k
		for m, method := range g.Methods {
			if !slices.Contains(httpMethods, method) {
				v.errorf(at+".methods["+strconv.Itoa(m)+"]", "%shttp: method %q: want one of %s", pre, method, strings.Join(httpMethods, ", "))
			}
		}
	}
}

// canonicalOrigin returns origin s with scheme and host in lower case and
// no default port; ok is false when s is not an http or https origin.
func canonicalOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	o := scheme + "://" + host
	if port != "" {
		o += ":" + port
	}
	return o, true
}
