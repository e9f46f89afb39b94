package envref

import (
	"regexp"
	"slices"
	"strings"
)

// ref matches a reference: ${ then anything up to the first }.
var ref = regexp.MustCompile(`\$\{([^}]*)\}`)

// secretPrefix marks a reference to a provided secret.
const secretPrefix = "secret:"

// Ref is one reference in a value.
type Ref struct {
	// Name is the variable's or the secret's name, as written.
	Name string
	// Secret says the reference is ${secret:Name}, a provided secret.
	Secret bool
}

// String is the reference as written.
func (r Ref) String() string {
	if r.Secret {
		return "${" + secretPrefix + r.Name + "}"
	}
	return "${" + r.Name + "}"
}

// Refs returns the references of v, in order.
func Refs(v string) []Ref {
	var out []Ref
	for _, m := range ref.FindAllStringSubmatch(v, -1) {
		out = append(out, parse(m[1]))
	}
	return out
}

func parse(inner string) Ref {
	if n, ok := strings.CutPrefix(inner, secretPrefix); ok {
		return Ref{Name: n, Secret: true}
	}
	return Ref{Name: inner}
}

// Secrets returns the names of the provided secrets the maps' values refer
// to, sorted, each once.
func Secrets(maps ...map[string]string) []string {
	var out []string
	for _, m := range maps {
		for _, v := range m {
			for _, r := range Refs(v) {
				if r.Secret && !slices.Contains(out, r.Name) {
					out = append(out, r.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Expand replaces each reference of v with what lookup gives for it.
func Expand(v string, lookup func(Ref) string) string {
	if !strings.Contains(v, "${") {
		return v
	}
	return ref.ReplaceAllStringFunc(v, func(m string) string {
		return lookup(parse(m[2 : len(m)-1]))
	})
}
