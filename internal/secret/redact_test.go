package secret_test

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode"
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

		// The encodings of a value.
		{"base64", map[string]string{"K": "sk-canary-1234"}, "echo c2stY2FuYXJ5LTEyMzQ= | base64 -d", "echo [secret K] | base64 -d"},
		{"base64 without padding", map[string]string{"K": "sk-canary-1234"}, "token=c2stY2FuYXJ5LTEyMzQ;", "token=[secret K];"},
		{"url-safe base64", map[string]string{"K": "??>>??"}, "std Pz8+Pj8/ url Pz8-Pj8_", "std [secret K] url [secret K]"},
		{"base64 of a longer text, aligned", map[string]string{"K": "sk-canary-1234"}, "c2stY2FuYXJ5LTEyMzQgYW5kIG1vcmU=", "[secret K]gYW5kIG1vcmU="},
		{"base64 of a longer text, one byte in", map[string]string{"K": "sk-canary-1234"}, "YXNrLWNhbmFyeS0xMjM0IGFuZCBtb3Jl", "YX[secret K]IGFuZCBtb3Jl"},
		{"base64 of a longer text, two bytes in", map[string]string{"K": "sk-canary-1234"}, "YWJzay1jYW5hcnktMTIzNCBhbmQgbW9yZQ==", "YWJ[secret K]CBhbmQgbW9yZQ=="},
		{"hex", map[string]string{"K": "sk-1234"}, "736b2d31323334 736B2D31323334", "[secret K] [secret K]"},
		{"query escaped", map[string]string{"PW": "p@ss w/rd:1"}, "?pw=p%40ss+w%2Frd%3A1&x", "?pw=[secret PW]&x"},
		{"strictly escaped", map[string]string{"PW": "p@ss w/rd:1"}, "p%40ss%20w%2Frd%3A1", "[secret PW]"},
		{"path escaped", map[string]string{"PW": "p@ss w/rd:1"}, "/users/p@ss%20w%2Frd:1/", "/users/[secret PW]/"},
		{"userinfo escaped", map[string]string{"PW": "p@ss;w/rd"}, "https://u:p%40ss;w%2Frd@host", "https://u:[secret PW]@host"},
		{"JSON escaped", map[string]string{"PW": `a"b\c<d>`}, `{"pw":"a\"b\\c<d>","html":"a\"b\\c\u003cd\u003e"}`, `{"pw":"[secret PW]","html":"[secret PW]"}`},
		{"JSON escaped slash", map[string]string{"PW": "a/b/c/d"}, `{"pw":"a\/b\/c\/d"}`, `{"pw":"[secret PW]"}`},
		{"forms of one value overlap", map[string]string{"K": "abcd"}, "YWJjZA==YWJjZA", "[secret K][secret K]"},
		{"value beside its encoding", map[string]string{"K": "abcd"}, "abcd61626364", "[secret K][secret K]"},

		// The password of a URL in a value.
		{"URL rewritten around its password", map[string]string{"DB": "https://app:s3cr%21t-pw@db.example.com/app"},
			"https://app:s3cr%21t-pw@mirror.example.com/other, s3cr!t-pw", "https://app:[secret DB]@mirror.example.com/other, [secret DB]"},
		{"URL as it is", map[string]string{"DB": "https://app:s3cr%21t-pw@db.example.com/app"}, "db=https://app:s3cr%21t-pw@db.example.com/app.", "db=[secret DB]."},
		{"URL password in its escapes, not in a mix", map[string]string{"DB": "postgres://app:p%40ss%2Fword@db/app"}, "p@ss/word p%40ss%2Fword p@ss%2Fword p%40ss/word", "[secret DB] [secret DB] [secret DB] p%40ss/word"},
		{"URL password too short", map[string]string{"DB": "https://app:pw1@db.example.com"}, "https://app:pw1@mirror", "https://app:pw1@mirror"},
		{"URL without a password", map[string]string{"DB": "https://app@db.example.com/x"}, "https://app@mirror/x", "https://app@mirror/x"},
		{"several URLs", map[string]string{"DBS": "a=https://u:first-pw@h1 b=https://u:second-pw@h2/"}, "first-pw second-pw", "[secret DBS] [secret DBS]"},
		{"value shares a form with another", map[string]string{"A": "abcd", "B": "61626364"}, "61626364", "[secret B]"},
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
		{"no match, many forms", secret.NewRedactor(benchSecrets)},
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
		// Text without any value comes back unchanged, if it holds no
		// encoding of one either: no letter or digit but x and y, which no
		// base64 of four or more characters of an x-and-y value is made
		// of.
		if strings.ContainsFunc(text, func(r rune) bool { return unicode.IsLetter(r) && r != 'x' && r != 'y' || unicode.IsDigit(r) }) {
			return
		}
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

// FuzzRedactForms: whatever the value and the text around it, Redact never
// panics, and its output holds neither the value nor its base64 or hex
// where the text held them whole. The value is inserted in the text as
// itself and in those encodings, and the text may hold more.
func FuzzRedactForms(f *testing.F) {
	f.Add("key=", "sk-canary-1234", "\n", "other")
	f.Add("", "p@ss w/rd:1", "", "https://u:p%40ss@h")
	f.Add("x", "\xff\xfe\x00\x01", "y", "")
	f.Add("https://app:", "https://app:s3cr%21t@db/app", "@mirror", "s3cr!t")
	f.Add("aaaa", "aaaa", "aaaa", "aaaaaaaa")
	f.Add("", "abc", "", "abc")
	f.Add("[secret K", "]abcd", "", "secret")
	f.Fuzz(func(t *testing.T, prefix, v, suffix, other string) {
		r := secret.NewRedactor(map[string]string{"K": v, "O": other})
		b := []byte(v)
		encoded := []string{
			base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
			hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		}
		// A value with a bracket, or inside a label, can show in the
		// output by the labels' doing; its encodings cannot.
		checkValue := !strings.ContainsAny(v, "[]") && !strings.Contains("[secret K][secret O]", v)
		for _, form := range append([]string{v}, encoded...) {
			text := prefix + form + suffix + other
			got := r.Redact(text)
			if len(v) < secret.MinRedactLen {
				if got != secret.NewRedactor(map[string]string{"O": other}).Redact(text) {
					t.Fatalf("Redact(%q) = %q: a value shorter than MinRedactLen changed it", text, got)
				}
				continue
			}
			for _, e := range encoded {
				if strings.Contains(got, e) {
					t.Fatalf("Redact(%q) = %q still holds %q, an encoding of %q", text, got, e, v)
				}
			}
			if checkValue && strings.Contains(got, v) {
				t.Fatalf("Redact(%q) = %q still holds the value %q", text, got, v)
			}
		}
	})
}

// benchSecrets are three secrets as an instance holds them: an API key, a
// password that escapes differently in every encoding, a service URL.
var benchSecrets = map[string]string{
	"OPENAI_API_KEY": "sk-proj-7f3a9c1e5b2d4f60a8c7e91b2d3f4a5b",
	"DB_PASSWORD":    `p@ss"w/rd: 9&x=1`,
	"DB":             "postgres://app:s3cr%21t-pw-42@db.internal:5432/app",
}

// benchResult is a 4 KiB tool result, a directory listing.
func benchResult() string {
	var b strings.Builder
	for i := 0; b.Len() < 4096-64; i++ {
		fmt.Fprintf(&b, "-rw-r--r--  1 app  staff  %5d Jan %2d 12:%02d report-%03d.csv\n", 1000+37*i, 1+i%28, i%60, i)
	}
	return b.String()
}

// BenchmarkRedact redacts a 4 KiB tool result of the three benchSecrets,
// every form included: one that holds none, and one that holds the base64
// of the API key.
func BenchmarkRedact(b *testing.B) {
	r := secret.NewRedactor(benchSecrets)
	clean := benchResult()
	half := len(clean) / 2
	key := base64.StdEncoding.EncodeToString([]byte(benchSecrets["OPENAI_API_KEY"]))
	tests := []struct {
		name, text string
	}{
		{"4KiB no match", clean},
		{"4KiB one match", clean[:half] + key + clean[half+len(key):]},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.text)))
			for b.Loop() {
				r.Redact(tt.text)
			}
		})
	}
}

// BenchmarkNewRedactor makes the Redactor of the three benchSecrets, as an
// instance does once per load.
func BenchmarkNewRedactor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		secret.NewRedactor(benchSecrets)
	}
}
