package envref

import (
	"reflect"
	"testing"
)

func TestRefs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Ref
	}{
		{"plain", nil},
		{"$HOME and $ alone", nil},
		{"${HOME}", []Ref{{Name: "HOME"}}},
		{"Bearer ${secret:API_TOKEN}", []Ref{{Name: "API_TOKEN", Secret: true}}},
		{"${A}:${secret:B}", []Ref{{Name: "A"}, {Name: "B", Secret: true}}},
		{"${}", []Ref{{}}},
		{"${unclosed", nil},
	} {
		if got := Refs(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Refs(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	lookup := func(r Ref) string {
		if r.Secret {
			return "s(" + r.Name + ")"
		}
		return "e(" + r.Name + ")"
	}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"price: $5, $HOME", "price: $5, $HOME"},
		{"Bearer ${secret:TOKEN}", "Bearer s(TOKEN)"},
		{"${A}/${B}", "e(A)/e(B)"},
		{"${secret:}", "s()"},
	} {
		if got := Expand(tc.in, lookup); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	got := Secrets(map[string]string{
		"Authorization": "Bearer ${secret:TOKEN}",
		"X":             "${secret:B} ${HOME} ${secret:TOKEN}",
	}, map[string]string{"Y": "none", "Z": "${secret:A}"})
	if want := []string{"A", "B", "TOKEN"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Secrets = %v, want %v", got, want)
	}
	if got := Secrets(); got != nil {
		t.Errorf("Secrets(nil) = %v, want nil", got)
	}
}

func TestRefString(t *testing.T) {
	if s := (Ref{Name: "T", Secret: true}).String(); s != "${secret:T}" {
		t.Errorf("got %q", s)
	}
	if s := (Ref{Name: "HOME"}).String(); s != "${HOME}" {
		t.Errorf("got %q", s)
	}
}

// FuzzExpand checks that expanding each reference to itself as written
// gives the value back, and that Refs finds what Expand replaces.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${HOME}", "Bearer ${secret:T}", "${a}${b}", "$${x}}", "${", "}${secret:}", "${ä}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got := Expand(v, Ref.String); got != v {
			t.Fatalf("Expand(%q, as written) = %q", v, got)
		}
		n := 0
		Expand(v, func(Ref) string { n++; return "" })
		if refs := Refs(v); len(refs) != n {
			t.Fatalf("Refs(%q) found %d, Expand replaced %d", v, len(refs), n)
		}
	})
}
