package secret

import (
	"slices"
	"strings"
	"testing"
)

// FuzzFindProbes checks the multi-pattern search against strings.Contains:
// findProbes finds a probe if and only if the text holds one, and marks
// exactly the probes the text holds.
func FuzzFindProbes(f *testing.F) {
	f.Add("key sk-canary-1234 and c2stY2FuYXJ5LTEyMzQ=", "sk-canary-1234", "p@ss w/rd", "")
	f.Add("aaaaaaaaaaaa", "aaaa", "aaaaa", "baaa")
	f.Add("abc", "abcd", "", "")
	f.Add("xxxxyyyy 78787878", "xxxx", "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy", "https://u:xyxyxy@h")
	f.Fuzz(func(t *testing.T, text, a, b, c string) {
		r := NewRedactor(map[string]string{"A": a, "B": b, "C": c})
		if r.empty() {
			return
		}
		bits := make([]uint64, (len(r.probes)+63)/64)
		holds := r.findProbes(text, bits)
		found := make([]bool, len(r.probes))
		want := make([]bool, len(r.probes))
		for i, p := range r.probes {
			found[i] = bits[i/64]&(1<<(i%64)) != 0
			want[i] = strings.Contains(text, p)
		}
		if !slices.Equal(found, want) || holds != slices.Contains(want, true) {
			t.Fatalf("findProbes(%q) = %v, found %v; want %v (probes %q)", text, holds, found, want, r.probes)
		}
		for _, p := range r.patterns {
			if strings.Contains(text, p.text) && !found[p.probe] {
				t.Fatalf("pattern %q is in %q, but not its probe %q", p.text, text, r.probes[p.probe])
			}
		}
	})
}
