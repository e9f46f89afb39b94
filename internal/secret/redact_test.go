package secret_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/ganglion-dev/ganglion/internal/racecheck"
	"github.com/ganglion-dev/ganglion/internal/secret"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name    string
		secrets map[string]string
		in      string
		want    string
	}{
		{"no secrets", nil, "nothing to hide", "nothing to hide"},
		{"empty text", map[string]string{"K": "sk-1234"}, "", ""},
		{"no occurrence", map[string]string{"K": "sk-1234"}, "sk-123 is not it", "sk-123 is not it"},
		{"one occurrence", map[string]string{"OPENAI_API_KEY": "sk-1234"}, "Authorization: Bearer sk-1234", "Authorization: Bearer [secret OPENAI_API_KEY]"},
		{"multiple occurrences", map[string]string{"K": "sk-1234"}, "sk-1234 and sk-1234, sk-1234", "[secret K] and [secret K], [secret K]"},
		{"adjacent occurrences", map[string]string{"K": "abcd"}, "abcdabcd", "[secret K][secret K]"},
		{"self-overlapping occurrences", map[string]string{"K": "aaaa"}, "xaaaaaay", "x[secret K]y"},
		{"whole text", map[string]string{"K": "sk-1234"}, "sk-1234", "[secret K]"},
		{"several secrets", map[string]string{"A": "alpha-key", "B": "beta-key"}, "a=alpha-key b=beta-key", "a=[secret A] b=[secret B]"},
		{"value containing another", map[string]string{"LONG": "sk-abcd1234", "SHORT": "abcd"}, "key sk-abcd1234 part abcd", "key [secret LONG] part [secret SHORT]"},
		{"contained value at the same start", map[string]string{"LONG": "abcd1234", "SHORT": "abcd"}, "abcd1234", "[secret LONG]"},
		{"contained value at the end", map[string]string{"LONG": "abcd1234", "SHORT": "1234"}, "abcd1234", "[secret LONG]"},
		{"partial overlap", map[string]string{"A": "abcdef", "B": "defghi"}, "<abcdefghi>", "<[secret A][secret B]>"},
		{"chain of overlaps", map[string]string{"A": "abcd", "B": "cdef", "C": "efgh"}, "abcdefgh", "[secret A][secret B][secret C]"},
		{"short values untouched", map[string]string{"PIN": "123", "X": "a", "EMPTY": ""}, "PIN 123 a", "PIN 123 a"},
		{"short beside long", map[string]string{"PIN": "123", "TOKEN": "tok-9876"}, "123 tok-9876", "123 [secret TOKEN]"},
		{"exactly MinRedactLen", map[string]string{"K": "1234"}, "pin 1234", "pin [secret K]"},
		{"same value, two names", map[string]string{"B": "shared-value", "A": "shared-value"}, "shared-value", "[secret A]"},
		{"multibyte", map[string]string{"K": "пароль"}, "мой пароль!", "мой [secret K]!"},
		{"newline in value", map[string]string{"PEM": "-----BEGIN\nKEY"}, "x -----BEGIN\nKEY y", "x [secret PEM] y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secret.NewRedactor(tt.secrets)
			if got := r.Redact(tt.in); got != tt.want {
				t.Fatalf("Redact(%q)\n got: %q\nwant: %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactorEmpty(t *testing.T) {
	tests := []struct {
		name string
		r    *secret.Redactor
		want bool
	}{
		{"nil", nil, true},
		{"nil map", secret.NewRedactor(nil), true},
		{"only short values", secret.NewRedactor(map[string]string{"A": "abc", "B": ""}), true},
		{"one value", secret.NewRedactor(map[string]string{"A": "abcd"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Empty(); got != tt.want {
				t.Fatalf("Empty() = %v, want %v", got, tt.want)
			}
			const s = "abcd abc"
			if !tt.want {
				return
			}
			if got := tt.r.Redact(s); got != s {
				t.Fatalf("Redact = %q, want it unchanged", got)
			}
		})
	}
}

// TestRedactReturnsInput: text without secrets comes back as the same
// string, without allocating.
func TestRedactReturnsInput(t *testing.T) {
	s := strings.Repeat("an ordinary log line, nothing secret in it\n", 100)
	tests := []struct {
		name string
		r    *secret.Redactor
	}{
		{"nil", nil},
		{"empty", secret.NewRedactor(nil)},
		{"no match", secret.NewRedactor(map[string]string{"A": "sk-1234", "B": "ghp_abcdef", "C": "xoxb-42"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Redact(s); unsafe.StringData(got) != unsafe.StringData(s) {
				t.Fatal("Redact copied a string it did not change")
			}
			if racecheck.Enabled {
				return // allocation counts are asserted in CI's pass without -race
			}
			if n := testing.AllocsPerRun(100, func() { tt.r.Redact(s) }); n != 0 {
				t.Fatalf("allocs = %v, want 0", n)
			}
		})
	}
}

// FuzzRedact: no value survives redaction. Values are drawn from the
// letters x and y, which no label contains, so a value in the output can
// only come from text Redact left alone.
func FuzzRedact(f *testing.F) {
	f.Add("xyxyxxyy and xxxx", "xyxy", "yxxy", "xxxx")
	f.Add("xxxxxxxxx", "xxxx", "xxxxx", "xxxxxx")
	f.Add("yxyxyxyxy", "yxyx", "xyxy", "yxy")
	f.Add("", "xxxx", "", "")
	f.Fuzz(func(t *testing.T, text, a, b, c string) {
		xy := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r%2 == 0 {
					return 'x'
				}
				return 'y'
			}, s)
		}
		secrets := map[string]string{"A": xy(a), "B": xy(b), "C": xy(c)}
		got := secret.NewRedactor(secrets).Redact(text)
		for name, v := range secrets {
			if len(v) >= secret.MinRedactLen && strings.Contains(got, v) {
				t.Fatalf("Redact(%q) = %q still holds %s = %q", text, got, name, v)
			}
		}
		// Text without any value comes back unchanged.
		for _, v := range secrets {
			if len(v) >= secret.MinRedactLen && strings.Contains(text, v) {
				return
			}
		}
		if got != text {
			t.Fatalf("Redact(%q) = %q, but it holds no value", text, got)
		}
	})
}
