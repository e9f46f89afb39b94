package tokens

import (
	"compress/gzip"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// The encodings' expressions. Wrapped in a group, they run in the
// expression engine's interpreter, which does what the expressions say;
// as written, they run the code github.com/tiktoken-go/tokenizer compiled
// from them, which splits some runs of white space wrongly ("\n  \nx" as
// "\n", "  \n", "x" rather than "\n  \n", "x").
var (
	cl100kExpr = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200kExpr  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// reference splits as the expressions say.
	reference = map[string]*regexp2.Regexp{
		"cl100k_base": regexp2.MustCompile("(?:"+cl100kExpr+")", regexp2.None),
		"o200k_base":  regexp2.MustCompile("(?:"+o200kExpr+")", regexp2.None),
	}
	// library splits as the library does.
	library = map[string]*regexp2.Regexp{
		"cl100k_base": regexp2.MustCompile(cl100kExpr, regexp2.None),
		"o200k_base":  regexp2.MustCompile(o200kExpr, regexp2.None),
	}
	codecs = map[string]tokenizer.Encoding{"cl100k_base": tokenizer.Cl100kBase, "o200k_base": tokenizer.O200kBase}
)

func split(t testing.TB, re *regexp2.Regexp, s string) []string {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// libraryCount is what the library counts s as, and what this package
// counts the library's pieces as: both byte-pair encode the same pieces,
// so they must agree token for token.
func libraryCount(t testing.TB, e *Encoding, s string) (lib, ours int) {
	codec, err := tokenizer.Get(codecs[e.name])
	if err != nil {
		t.Fatal(err)
	}
	lib, err = codec.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range split(t, library[e.name], s) {
		ours += e.ranks().count(p)
	}
	return lib, ours
}

// samples are texts whose splits take the expressions' corners: contractions,
// case changes, marks, scripts without case, digits, symbol runs, every kind
// of white space and line break.
var samples = []string{
	"",
	"Hello, world! It's a test: don't, we'll, I'd, they're, you've, I'm.",
	"IT'S DON'T WE'LL I'D THEY'RE YOU'VE I'M 'ſ 'S 'Ll",
	"'sup 'twas 'tis rock'n'roll '' ' s",
	"CamelCaseWords and HTTPServer, iPhone, McDonald's, ÉCOLE école",
	"x = 12345678 + 3.14159; y=0x1F;\tz //comment\n",
	"line one\r\nline two\n\n\nline three  \n  indented\n\t\ttabs",
	"trailing spaces   ",
	"   leading spaces",
	"a  b   c    d",
	"!!! ??? ... --- *** /// \\\\\\ ''' \"\"\"",
	" !\n\n /path/to/file.go\r\n// c++ //",
	"日本語のテキストと漢字、カタカナ。",
	"한국어 문장입니다. 숫자 123과 함께.",
	"Ελληνικά κείμενα, Кириллица и латиница.",
	"العربية والعبرية עברית",
	"हिन्दी में लिखा गया पाठ (marks: क्षि)",
	"e\u0301 cafe\u0301 \u0301\u0302x ab\u0300c",
	"emoji 👍🏽 family 👨‍👩‍👧 flags 🇰🇷🇺🇸 ❤️",
	"ǅungla ǈ ǋ Titlecase ᾈ",
	"ʰʲ modifier ˈstress ʼapostrophe",
	"full-width ＡＢＣ１２３ ideographic\u3000space\u00a0nbsp\u2028ls\u2029ps\u0085nel",
	"numbers ١٢٣٤ ⅫⅢ ½¾ ²³ ① 𝟙𝟚",
	"\v\f\r \x1c\x1d\x1e\x1f",
	`{"path":"src/runtime.go","args":[1,2,3],"ok":true}`,
	"<tool_call>read_file</tool_call> [USER_QUESTION] id: q1 [/USER_QUESTION]",
	"mixed\r\r\n\n\r end",
	"ς Σ ß ẞ ﬁ ﬀ İ ı",
}

// TestSplitMatchesTheReference: on every sample, the pieces are the
// reference expression's matches, and the count is the reference codec's.
func TestSplitMatchesTheReference(t *testing.T) {
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		for _, s := range samples {
			checkAgainstReference(t, e, s)
		}
	}
}

// checkAgainstReference checks that e splits s as its expression says,
// that its byte-pair encoding of the library's pieces of s counts what the
// library counts, and that Count is the sum of its pieces' counts.
func checkAgainstReference(t testing.TB, e *Encoding, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		// The expression engine reads a byte that is not UTF-8 as U+FFFD,
		// and so does a provider reading JSON.
		s = replaceInvalid(s)
	}
	pieces := e.Pieces(s)
	if want := split(t, reference[e.name], s); !slices.Equal(pieces, want) {
		t.Fatalf("%s: pieces of %q:\n got %q\nwant %q", e.name, s, pieces, want)
	}
	if lib, ours := libraryCount(t, e, s); lib != ours {
		t.Fatalf("%s: the library counts %q as %d tokens, the byte-pair encoding of its pieces as %d", e.name, s, lib, ours)
	}
	want := 0
	for _, p := range pieces {
		want += e.ranks().count(p)
	}
	if got := e.Count(s); got != want {
		t.Fatalf("%s: Count(%q) = %d, its pieces %d", e.name, s, got, want)
	}
}

// TestWhiteSpaceRunsSplitAsTheExpressionSays: a run of white space that
// holds line breaks is one piece up to its last break, where the
// library's compiled expression cuts it after its first.
func TestWhiteSpaceRunsSplitAsTheExpressionSays(t *testing.T) {
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		if got, want := e.Pieces("a\n  \nx"), []string{"a", "\n  \n", "x"}; !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", e.name, got, want)
		}
		if got := split(t, library[e.name], "a\n  \nx"); slices.Equal(got, e.Pieces("a\n  \nx")) {
			t.Logf("%s: the library's compiled expression is fixed: %q", e.name, got)
		}
	}
}

// TestLongPieces: a long piece merges through the heap to what the scan
// gives, and to what the library counts.
func TestLongPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabets := []string{"ab", "abcdefghijklmnopqrstuvwxyz", "aeiou", "日本語漢字", "!?*-=+#", "0"}
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		codec, err := tokenizer.Get(codecs[e.name])
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			letters := []rune(alphabets[i%len(alphabets)])
			var b strings.Builder
			for range longPiece/2 + rng.IntN(4*longPiece) {
				b.WriteRune(letters[rng.IntN(len(letters))])
			}
			p := b.String()
			if alphabets[i%len(alphabets)] == "0" {
				p = strings.Repeat("a", 100+i*20) // one letter: the worst case for a scan
			}
			r := e.ranks()
			long := r.countLong(p)
			if len(p) <= 2048 {
				if scan := r.countScan(p); scan != long {
					t.Fatalf("%s: %q: heap %d, scan %d", e.name, p, long, scan)
				}
			}
			if pieces := e.Pieces(p); len(pieces) == 1 {
				if lib, _ := codec.Count(p); lib != long {
					t.Fatalf("%s: %q: %d, the library %d", e.name, p, long, lib)
				}
			}
		}
	}
}

// TestCountMatchesOnRandomText checks thousands of texts drawn from the
// samples' characters, cut and shuffled, with the cache warm and cold.
func TestCountMatchesOnRandomText(t *testing.T) {
	var chars []rune
	for _, s := range samples {
		chars = append(chars, []rune(s)...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteRune(chars[rng.IntN(len(chars))])
		}
		for _, e := range []*Encoding{Cl100k(), O200k()} {
			if i%100 == 0 {
				e.cache = cache{}
			}
			checkAgainstReference(t, e, b.String())
		}
	}
}

// FuzzSplit checks the splitters against the reference expressions and the
// counts against the reference codec, on any text, valid UTF-8 or not.
func FuzzSplit(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Add("\xff\xfe invalid \xc3 utf-8 \xe2\x82")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range []*Encoding{Cl100k(), O200k()} {
			checkAgainstReference(t, e, s)
			if raw, valid := e.Count(s), e.Count(replaceInvalid(s)); raw != valid {
				t.Fatalf("%s: %q counts %d, with U+FFFD for its bad bytes %d", e.name, s, raw, valid)
			}
		}
	})
}

func TestForModel(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"gpt-4o", "o200k_base"},
		{"gpt-4o-mini-2024-07-18", "o200k_base"},
		{"gpt-4.1-nano", "o200k_base"},
		{"gpt-5", "o200k_base"},
		{"o3-mini", "o200k_base"},
		{"o1", "o200k_base"},
		{"openai/gpt-4o", "o200k_base"},
		{"ft:gpt-4o-2024-08-06:org::id", "o200k_base"},
		{"GPT-4O", "o200k_base"},
		{"gpt-4", "cl100k_base"},
		{"gpt-4-turbo", "cl100k_base"},
		{"gpt-3.5-turbo", "cl100k_base"},
		{"claude-sonnet-4-5", "cl100k_base"},
		{"llama3.1", "cl100k_base"},
		{"", "cl100k_base"},
	} {
		if got := ForModel(tc.model).Name(); got != tc.want {
			t.Errorf("ForModel(%q) = %s, want %s", tc.model, got, tc.want)
		}
	}
}

// TestCountAllocatesNothing: a text whose pieces are cached is counted
// without an allocation.
func TestCountAllocatesNothing(t *testing.T) {
	s := strings.Repeat("the runtime keeps every message of a conversation, ", 4)
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		e.Count(s)
		if n := testing.AllocsPerRun(100, func() { e.Count(s) }); n != 0 {
			t.Errorf("%s: %v allocations a count", e.name, n)
		}
	}
}

// BenchmarkTokenCount is the cost of counting one message of about 50
// tokens from a mix of prose, tool calls and tool results, per encoding:
// with the pieces cached (as in a conversation, whose words repeat), cold
// (every piece encoded), and the library's own count, for comparison.
func BenchmarkTokenCount(b *testing.B) {
	msgs := benchTexts(512)
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		b.Run(e.name, func(b *testing.B) {
			for _, m := range msgs {
				e.Count(m)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e.Count(msgs[i%len(msgs)])
				i++
			}
		})
		b.Run(e.name+"/cold", func(b *testing.B) {
			// Every piece encoded again: the cost of text never seen.
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				e.cache = cache{}
				b.StartTimer()
				e.Count(msgs[i%len(msgs)])
				i++
			}
		})
		b.Run(e.name+"/library", func(b *testing.B) {
			codec, _ := tokenizer.Get(codecs[e.name])
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				codec.Count(msgs[i%len(msgs)])
				i++
			}
		})
	}
}

// benchTexts are texts of about 50 tokens: prose, JSON arguments and
// tool output, from a fixed seed.
func benchTexts(n int) []string {
	rng := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("the runtime keeps every message of a conversation and shows the model only what fits its context window with summaries in place of older turns")
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		switch i % 4 {
		case 0, 1:
			for j := range 45 {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[rng.IntN(len(words))])
			}
			b.WriteString(".")
		case 2:
			fmt.Fprintf(&b, `{"path":"src/%s/%s.go","line":%d,"query":"%s %s"}`, words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(5000), words[rng.IntN(len(words))], words[rng.IntN(len(words))])
			for range 10 {
				b.WriteString(" " + words[rng.IntN(len(words))])
			}
		default:
			for range 6 {
				fmt.Fprintf(&b, "%s:%d: %s %s\n", words[rng.IntN(len(words))], rng.IntN(900), words[rng.IntN(len(words))], words[rng.IntN(len(words))])
			}
		}
		out[i] = b.String()
	}
	return out
}

// BenchmarkLoad is the cost of reading an encoding's vocabulary, once per
// process, at its first count: decompressing the embedded data and
// building the map of ranks.
func BenchmarkLoad(b *testing.B) {
	for _, e := range []struct{ name, data string }{{"cl100k_base", cl100kData}, {"o200k_base", o200kData}} {
		b.Run(e.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				readRanks(e.name, e.data)
			}
		})
	}
}

// TestVocabularyIsTheLibrarys: the embedded vocabularies are the
// library's, token for token: each ID the library decodes has the same
// bytes here, and no other token is here. If the library's vocabulary
// changed, run go generate.
func TestVocabularyIsTheLibrarys(t *testing.T) {
	for _, e := range []*Encoding{Cl100k(), O200k()} {
		codec, err := tokenizer.Get(codecs[e.name])
		if err != nil {
			t.Fatal(err)
		}
		byRank := map[int32]string{}
		for tok, id := range e.ranks() {
			if other, ok := byRank[id]; ok {
				t.Fatalf("%s: ID %d is both %q and %q", e.name, id, other, tok)
			}
			byRank[id] = tok
		}
		want, misses := 0, 0
		for id := uint(0); misses < 1024; id++ { // past the last ID, every decode fails
			tok, err := codec.Decode([]uint{id})
			if err != nil || tok == "" {
				misses++
				if got, ok := byRank[int32(id)]; ok {
					t.Fatalf("%s: ID %d is %q here, no token in the library", e.name, id, got)
				}
				continue
			}
			misses = 0
			want++
			if got, ok := byRank[int32(id)]; !ok || got != tok {
				t.Fatalf("%s: ID %d is %q here (present: %v), %q in the library", e.name, id, got, ok, tok)
			}
		}
		if len(byRank) != want {
			t.Fatalf("%s: %d tokens here, %d in the library", e.name, len(byRank), want)
		}
		if least := map[string]int{"cl100k_base": 100_000, "o200k_base": 199_000}[e.name]; want < least {
			t.Fatalf("%s: the library decodes %d tokens, fewer than %d", e.name, want, least)
		}
	}
}

// TestReadRanks: data in the generator's format decodes to its tokens,
// an ID of length 0 to no token; damaged data panics, saying what is wrong
// and in which encoding.
func TestReadRanks(t *testing.T) {
	gz := func(raw string) string {
		var b strings.Builder
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(raw))
		zw.Close()
		return b.String()
	}
	badChecksum := func(s string) string { // gzip ends with the CRC-32 and the length
		return s[:len(s)-8] + "\xff\xff\xff\xff" + s[len(s)-4:]
	}
	for _, tc := range []struct {
		name, data string
		want       ranks
		panics     string
	}{
		{"tokens", gz("\x03\x01a\x00\x02bc"), ranks{"a": 0, "bc": 2}, ""},
		{"empty", gz("\x00"), ranks{}, ""},
		{"not gzip", "plain text, not gzip", nil, "tokens: the embedded vocabulary x: gzip: invalid header"},
		{"bad checksum", badChecksum(gz("\x01\x01a")), nil, "tokens: the embedded vocabulary x: gzip: invalid checksum"},
		{"no count", gz(""), nil, "tokens: the embedded vocabulary x: bad count of token IDs"},
		{"token past the end", gz("\x02\x01a\x05bc"), nil, "tokens: the embedded vocabulary x: token 1 runs past the end"},
		{"bytes past the last token", gz("\x01\x01abc"), nil, "tokens: the embedded vocabulary x: 2 bytes past the last token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				got := ""
				if v := recover(); v != nil {
					got = fmt.Sprint(v)
				}
				if got != tc.panics {
					t.Errorf("panics with %q, want %q", got, tc.panics)
				}
			}()
			if got := readRanks("x", tc.data); !maps.Equal(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

// TestLinksNoModule: the package links the standard library alone, so a
// program that counts tokens links no vocabulary module (the library
// generates megabytes of Go for its vocabularies, all of which it links).
func TestLinksNoModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH, which lists the package's dependencies: " + err.Error())
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}} {{end}}{{.ImportPath}}", ".")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	for line := range strings.Lines(string(out)) {
		mod, pkg, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && mod != "github.com/ganglion-dev/ganglion" {
			t.Errorf("links %s, of module %s", pkg, mod)
		}
	}
}

// Pieces returns the pieces e splits s into.
func (e *Encoding) Pieces(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := e.next(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}
