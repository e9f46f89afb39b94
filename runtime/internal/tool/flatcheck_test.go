package tool

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The tests below compare the flat check of a program without the JSON
// Schema validator with the validator itself, which the package's tests
// link (links_test.go).

// flatSchemas are flat schemas with every keyword the flat check covers.
var flatSchemas = []string{
	flatTestSchema,
	boundedTestSchema,
	`{"type":"object","properties":{
		"path":{"type":"string","minLength":1,"description":"p"},
		"offset":{"type":"integer","minimum":1},
		"limit":{"type":"integer","minimum":1}},
		"required":["path"],"additionalProperties":false}`,
	`{"properties":{
		"name":{"type":"string","minLength":2,"maxLength":3},
		"count":{"type":"integer","minimum":-1000,"maximum":1000000},
		"big":{"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807},
		"score":{"type":"number","minimum":0,"maximum":100},
		"either":{"type":["string","integer","null"],"minLength":1,"maximum":5},
		"ratio":{"type":["integer","number"]},
		"nested":{"type":"object"},
		"list":{"type":"array"},
		"a/b~c":{"type":"boolean"},
		"free":true,
		"empty":{}},
		"required":["name","count","zeta","alpha"]}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"t","$comment":"c","default":{},"examples":[{}],
		"deprecated":false,"readOnly":true,"writeOnly":false,
		"properties":{"q":{"type":"string","maxLength":1000,"title":"q","default":"x","examples":["y"],"deprecated":true}},
		"required":["q"],"additionalProperties":true}`,
	`{"type":"object","properties":{"n":{"type":"integer","minimum":1000000,"maximum":1000001},"s":{"type":"string","minLength":1000}},"additionalProperties":false}`,
	`{"type":"object","properties":{"tiny":{"minimum":0,"maximum":0}},"required":["tiny"]}`,
}

// checkBoth runs args through the flat check alone and through the
// validator alone, both after the checks they share (the JSON, the
// object, huge numbers), and returns their errors' texts.
func checkBoth(t testing.TB, schema string, args []byte) (own, lib string) {
	t.Helper()
	if JSONSchema == nil {
		t.Fatal("the test binary does not link runtime/jsonschema (links_test.go)")
	}
	ownCS := compileSchemaWith([]byte(schema), nil)
	libCS := compileSchemaWith([]byte(schema), JSONSchema)
	if ownCS.err != nil || libCS.err != nil || ownCS.flat == nil {
		t.Fatalf("schema %s: flat %v, own error %v, validator error %v", schema, ownCS.flat != nil, ownCS.err, libCS.err)
	}
	// Through CheckArguments's path: the fast check, then the rest.
	own, lib = errText(ownCS.check("t", args)), errText(libCS.check("t", args))
	if own != lib {
		return own, lib
	}
	// And without the fast check, which would hide a disagreement on
	// what it accepts.
	v, err := decodeObject(args)
	if err != nil {
		return own, lib
	}
	if _, _, huge := hugeNumber(v, nil, false); huge {
		return own, lib
	}
	return errText(mismatch(ownCS.flat.check(v))), errText(libCS.lib.Validate(v))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFlatCheckMatchesLibrary(t *testing.T) {
	long := strings.Repeat("é", 999)
	tests := []struct {
		schema int // index in flatSchemas
		args   string
		want   string // the validator's error, to pin the texts
	}{
		{0, `{"path":"a"}`, ""},
		{0, `{}`, `arguments do not match the schema: (root): missing property 'path'`},
		{0, `{"path":3}`, `arguments do not match the schema: /path: got number, want string`},
		{0, `{"path":"a","offset":1.0}`, ""},
		{0, `{"path":"a","offset":1e2}`, ""},
		{0, `{"path":"a","offset":1.5}`, `arguments do not match the schema: /offset: got number, want integer`},
		{0, `{"path":"a","offset":12.5e-1}`, `arguments do not match the schema: /offset: got number, want integer`},
		{0, `{"path":"a","flag":"yes"}`, `arguments do not match the schema: /flag: got string, want null or boolean`},
		{0, `{"path":"a","flag":null,"opts":[],"list":{}}`, "arguments do not match the schema:\n- /list: got object, want array\n- /opts: got array, want object"},
		{0, `{"pa\u0074h":"a"}`, ""},
		{0, `{"path":"a","extra":1,"Zed":{"x":1},"é":null,"it's":1,"q\"uote":2,"tab\t":3}`,
			`arguments do not match the schema: (root): additional properties 'Zed', 'extra', 'it\'s', 'q"uote', 'tab\t', 'é' not allowed`},
		{0, `{"path":null,"offset":null,"ratio":"1","flag":0,"opts":"x","list":1,"any":null,"x":1}`, "arguments do not match the schema:\n" +
			"- (root): additional properties 'x' not allowed\n- /flag: got number, want null or boolean\n- /list: got number, want array\n" +
			"- /offset: got null, want integer\n- /opts: got string, want object\n- /path: got null, want string\n- /ratio: got string, want number"},
		{1, `{"path":"","offset":0}`, "arguments do not match the schema:\n- /offset: minimum: got 0, want 1\n- /path: minLength: got 0, want 1"},
		{1, `{"path":"日本語日本語日本語","offset":1001}`, "arguments do not match the schema:\n- /offset: maximum: got 1,001, want 1,000\n- /path: maxLength: got 9, want 8"},
		{1, `{"path":"a\u0062c\n"}`, ""},
		{1, `{"path":"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00"}`, `arguments do not match the schema: /path: maxLength: got 9, want 8`},
		{1, `{"path":"\ud800"}`, ""},
		{1, "{\"path\":\"\xff\xfe\"}", ""},
		{1, `{"path":"a","offset":123456789012345678901}`, `arguments do not match the schema: /offset: maximum: got 1.2345678901234568×10²⁰, want 1,000`},
		{1, `{"path":"a","offset":-123456.75e1}`, "arguments do not match the schema: /offset: got number, want integer"},
		{1, `{"path":"a","ratio":-5.0000001}`, `arguments do not match the schema: /ratio: minimum: got -5.0000001, want -5`},
		{1, `{"path":"a","ratio":-1e300}`, `arguments do not match the schema: /ratio: minimum: got -1×10³⁰⁰, want -5`},
		{1, `{"path":"a","ratio":-1e400}`, `arguments do not match the schema: /ratio: minimum: got -∞, want -5`},
		{1, `{"path":"a","ratio":"-100"}`, ""},
		{1, `{"path":"a","offset":1e400}`, `arguments do not match the schema: /offset: maximum: got ∞, want 1,000`},
		{1, `{"path":"a","offset":1e401}`, `arguments do not match the schema: /offset: number 1e401 is out of range`},
		{2, `{"path":"a","offset":0.00001,"limit":-0.0001}`, "arguments do not match the schema:\n- /limit: got number, want integer\n- /offset: got number, want integer"},
		{3, `{"name":"ab","count":0}`, `arguments do not match the schema: (root): missing properties 'zeta', 'alpha'`},
		{3, `{"name":"abcd","count":1000001,"zeta":1,"alpha":2}`, "arguments do not match the schema:\n- /count: maximum: got 1.000001×10⁰⁶, want 1×10⁰⁶\n- /name: maxLength: got 4, want 3"},
		{3, `{"name":"ab","count":-1001,"zeta":1,"alpha":2,"score":100.5,"either":"","ratio":1.5,"a/b~c":1}`, "arguments do not match the schema:\n" +
			"- /a~1b~0c: got number, want boolean\n- /count: minimum: got -1,001, want -1,000\n- /either: minLength: got 0, want 1\n- /score: maximum: got 100.5, want 100"},
		{3, `{"name":"ab","count":0,"zeta":1,"alpha":2,"either":6,"big":9223372036854775808}`, "arguments do not match the schema:\n" +
			"- /big: maximum: got 9.223372036854776×10¹⁸, want 9.223372036854776×10¹⁸\n- /either: maximum: got 6, want 5"},
		{3, `{"name":"ab","count":0,"zeta":1,"alpha":2,"either":5.5,"score":-0.00012345}`, "arguments do not match the schema:\n" +
			"- /either: got number, want null or integer or string\n- /score: minimum: got -0.00012345, want 0"},
		{3, `{"name":"ab","count":0,"zeta":1,"alpha":2,"score":-1e-5,"free":[1],"empty":{"a":1},"extra":1}`, `arguments do not match the schema: /score: minimum: got -1×10⁻⁰⁵, want 0`},
		{3, `{"name":"ab","count":0,"zeta":1,"alpha":2,"big":-9223372036854775809}`, `arguments do not match the schema: /big: minimum: got -9.223372036854776×10¹⁸, want -9.223372036854776×10¹⁸`},
		{4, `{"q":"` + long + `"}`, ""},
		{4, `{"q":"` + long + `ab"}`, `arguments do not match the schema: /q: maxLength: got 1,001, want 1,000`},
		{5, `{"n":999999,"s":"` + long + `"}`, "arguments do not match the schema:\n- /n: minimum: got 999,999, want 1×10⁰⁶\n- /s: minLength: got 999, want 1,000"},
		{6, `{"tiny":-1e-400}`, `arguments do not match the schema: /tiny: minimum: got 0, want 0`},
		{6, `{"tiny":1e-400}`, `arguments do not match the schema: /tiny: maximum: got 0, want 0`},
		{6, `{"tiny":"x"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			own, lib := checkBoth(t, flatSchemas[tt.schema], []byte(tt.args))
			if own != lib {
				t.Errorf("the flat check and the validator differ:\nflat check: %s\nvalidator:  %s", own, lib)
			}
			if lib != tt.want {
				t.Errorf("validator:\n got %s\nwant %s", lib, tt.want)
			}
		})
	}
}

// TestFlatCheckMatchesLibraryGenerated runs generated arguments — wrong
// types, missing and extra properties, values at and past their bounds,
// multibyte and escaped strings, big numbers, fractions, null, nested
// values — through both.
func TestFlatCheckMatchesLibraryGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	n := 0
	for range 3000 {
		schema := flatSchemas[r.IntN(len(flatSchemas))]
		args := randomArgs(r, schema)
		own, lib := checkBoth(t, schema, args)
		if own != lib {
			t.Errorf("schema %s\nargs %s\nflat check: %s\nvalidator:  %s", schema, args, own, lib)
			if n++; n > 10 {
				t.FailNow()
			}
		}
	}
}

// randomValues are the values generated arguments are made of.
var randomValues = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `2`, `3`, `5`, `6`, `7`, `8`, `9`, `100`, `100.5`, `999`, `1000`, `1001`,
	`999999`, `1000000`, `1000001`, `-1000`, `-1001`, `-5`, `-5.5`, `-4.99`, `1.0`, `1.5`, `1e2`, `1E-2`, `2.50e1`,
	`0.0001`, `0.00001`, `-0.0`, `1e21`, `-1e-7`, `123456789012345678901234567890`, `9223372036854775807`,
	`9223372036854775808`, `-9223372036854775809`, `1e400`, `-1e400`, `1e-400`, `12345.678`, `3.0e0`,
	`""`, `"a"`, `"ab"`, `"abc"`, `"abcd"`, `"abcdefgh"`, `"abcdefghi"`, `"é"`, `"日本"`, `"日本語日本語日本"`, `"日本語日本語日本語"`,
	`"\u0061"`, `"\ud83d\ude00"`, `"a\nb"`, `"\"q\""`, `"x\\y"`, `"-100"`,
	`[]`, `[1]`, `[null,"x"]`, `{}`, `{"a":1}`, `{"path":{"path":"x"}}`, `[[{}]]`,
}

var randomKeys = []string{"path", "offset", "ratio", "flag", "opts", "list", "any", "name", "count", "big", "score",
	"either", "nested", "a/b~c", "free", "empty", "zeta", "alpha", "q", "n", "s", "tiny", "extra", "Zed", "é", "it's", ""}

func randomArgs(r *rand.Rand, schema string) []byte {
	var doc struct{ Properties map[string]json.RawMessage }
	_ = json.Unmarshal([]byte(schema), &doc)
	own := slices.Sorted(maps.Keys(doc.Properties))
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range r.IntN(7) {
		if i > 0 {
			sb.WriteByte(',')
		}
		key := randomKeys[r.IntN(len(randomKeys))]
		if r.IntN(3) > 0 { // mostly the schema's own properties
			key = own[r.IntN(len(own))]
		}
		sb.WriteString(strconv.Quote(key))
		sb.WriteByte(':')
		sb.WriteString(randomValues[r.IntN(len(randomValues))])
	}
	sb.WriteByte('}')
	return []byte(sb.String())
}

// FuzzFlatCheckMatchesLibrary: for any arguments, and any bounds in the
// schemas, the flat check and the validator agree, word for word.
func FuzzFlatCheckMatchesLibrary(f *testing.F) {
	seeds := []string{
		`{}`, `{"s":"abc","n":5}`, `{"s":"","n":-1}`, `{"s":"日本語","n":1e3}`, `{"s":null,"n":"5"}`,
		`{"s":"a\u00e9","n":5.0,"x":1}`, `{"n":123456789012345678901234567890}`, `{"n":-1e-300,"s":[]}`,
		`{"n":1e400}`, `[]`, `{"s":"a"} x`, `{"b":true,"o":{},"l":[1]}`, `{"b":null,"o":[],"l":{}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), int64(i)-3, int64(i*1000), []byte(s))
	}
	f.Add(uint8(1), int64(math.MinInt64), int64(math.MaxInt64), []byte(`{"n":-9223372036854775809,"s":"x"}`))
	f.Fuzz(func(t *testing.T, which uint8, lo, hi int64, args []byte) {
		lens := func(n int64) int64 { return (n%2000 + 2000) % 2000 }
		schemas := []string{
			fmt.Sprintf(`{"type":"object","properties":{"s":{"type":"string","minLength":%d,"maxLength":%d},"n":{"type":"integer","minimum":%d,"maximum":%d}},"required":["s"],"additionalProperties":false}`,
				lens(lo), lens(hi), lo, hi),
			fmt.Sprintf(`{"properties":{"n":{"type":["number","string"],"minimum":%d,"maxLength":%d},"s":{"minLength":%d},"b":{"type":"boolean"},"o":{"type":["object","null"]},"l":{"type":"array"}},"required":["n","b"]}`,
				lo, lens(hi), lens(lo)),
			flatTestSchema,
			boundedTestSchema,
		}
		own, lib := checkBoth(t, schemas[int(which)%len(schemas)], args)
		if own != lib {
			t.Errorf("args %q\nflat check: %s\nvalidator:  %s", args, own, lib)
		}
	})
}

// TestFlatNumbersPrintAsTheValidator: the flat check prints numbers as
// the validator's printer does, grouped and in its scientific notation.
func TestFlatNumbersPrintAsTheValidator(t *testing.T) {
	p := message.NewPrinter(language.English)
	r := rand.New(rand.NewPCG(41, 2))
	floats := []float64{0, 1, -1, 0.5, 999999, 999999.5, 1e6, 0.0001, 0.00009999, 1e-5, 1e21, 1e300,
		5e-324, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 9.223372036854776e18}
	for range 5000 {
		floats = append(floats, math.Float64frombits(r.Uint64()))
		floats = append(floats, float64(r.Int64N(1e12)-5e11)/math.Pow(10, float64(r.IntN(20))))
	}
	for _, f := range floats {
		if math.IsNaN(f) {
			continue
		}
		if got, want := formatFloat(f), p.Sprintf("%v", f); got != want {
			t.Errorf("formatFloat(%v) = %q, the validator prints %q", f, got, want)
		}
	}
	for _, n := range []int{0, 1, 12, 123, 1234, 12345, 123456, 1234567, math.MaxInt32} {
		if got, want := groupDigits(strconv.Itoa(n)), p.Sprintf("%d", n); got != want {
			t.Errorf("groupDigits(%d) = %q, the validator prints %q", n, got, want)
		}
	}
}

// TestFlatSchemasCompile: every flat schema compiles in the validator, so
// that a flat schema a program without it accepts is never one the
// validator refuses.
func TestFlatSchemasCompile(t *testing.T) {
	schemas := append([]string{}, flatSchemas...)
	for _, d := range []string{"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema",
		"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-06/schema", "https://json-schema.org/schema#"} {
		schemas = append(schemas, `{"$schema":"`+d+`","type":"object","properties":{"a":{"type":["integer","null"],"minimum":-3,"maximum":3,"minLength":0,"maxLength":2147483647,"examples":[1]}},"required":[],"additionalProperties":false}`)
	}
	for _, s := range schemas {
		if flat, b := newFlatSchema(mustDoc(t, s)); flat == nil {
			t.Errorf("not flat (%v): %s", b.error(), s)
		}
		if _, err := JSONSchema(mustDoc(t, s)); err != nil {
			t.Errorf("the validator refuses a flat schema: %v\n%s", err, s)
		}
	}
}

func mustDoc(t *testing.T, s string) any {
	t.Helper()
	doc, err := unmarshalSchema([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestNotFlatWithoutValidator: without the validator, a schema that is not
// flat fails at the call, naming the keyword, where it is, and the import;
// many of these the validator refuses too, for its own reasons.
func TestNotFlatWithoutValidator(t *testing.T) {
	const need = `the JSON Schema validator: add import _ "github.com/ganglion-dev/ganglion/runtime/jsonschema"`
	tests := []struct{ schema, want string }{
		{`{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]}}}`,
			`tool "t": parameters schema uses "enum" (at /properties/unit), which needs ` + need},
		{`{"anyOf":[{"required":["a"]},{"required":["b"]}],"type":"object"}`,
			`tool "t": parameters schema uses "anyOf" (at the top), which needs ` + need},
		{`{"type":"object","properties":{"a/b~c":{"type":"number","minimum":0.5}}}`,
			`tool "t": parameters schema uses "minimum" (at /properties/a~1b~0c) with a value that needs ` + need},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`,
			`tool "t": parameters schema uses "properties" (at /properties/a), which needs ` + need},
		{`{"type":"object","properties":{"a":{"pattern":"x","$ref":"#/$defs/a"}}}`, // the first in sorted order
			`tool "t": parameters schema uses "$ref" (at /properties/a), which needs ` + need},
		{`{"type":"object","properties":{"a":false}}`,
			`tool "t": parameters schema is neither true nor an object (at /properties/a), which needs ` + need},
		{`{"type":"array"}`, `tool "t": parameters schema uses "type" (at the top) with a value that needs ` + need},
		{`{"type":"object","required":["a","a"]}`, `tool "t": parameters schema uses "required" (at the top) with a value that needs ` + need},
		{`{"type":"object","additionalProperties":{"type":"string"}}`,
			`tool "t": parameters schema uses "additionalProperties" (at the top) with a value that needs ` + need},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
			`tool "t": parameters schema uses "$schema" (at the top) with a value that needs ` + need},
		{`{"$id":"https://example.com/s","type":"object"}`, `tool "t": parameters schema uses "$id" (at the top), which needs ` + need},
		{`{"minLength":-1}`, `tool "t": parameters schema uses "minLength" (at the top), which needs ` + need},
		{`false`, `tool "t": parameters schema is neither true nor an object (at the top), which needs ` + need},
		{`[]`, `tool "t": parameters schema is neither true nor an object (at the top), which needs ` + need},
		// What does not depend on the validator stays as it was.
		{`{"type":`, `tool "t": parameters schema is not valid JSON: unexpected EOF`},
		{`{} {}`, `tool "t": parameters schema is not valid JSON: invalid character after top-level value`},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			err := compileSchemaWith([]byte(tt.schema), nil).check("t", []byte(`{}`))
			if got := errText(err); got != tt.want {
				t.Errorf("error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	// Empty and any-object schemas need nothing.
	for _, s := range []string{`{}`, `true`, `{"type":"object"}`} {
		if err := compileSchemaWith([]byte(s), nil).check("t", []byte(`{"x":[1]}`)); err != nil {
			t.Errorf("schema %s: %v", s, err)
		}
	}
}

// BenchmarkCheckArgumentsWithoutValidator is the flat check of a program
// that does not link the validator: the fast check accepts alone; a
// refusal decodes the arguments and words the violations.
func BenchmarkCheckArgumentsWithoutValidator(b *testing.B) {
	for _, bb := range []struct{ name, args string }{
		{"valid", `{"path":"src/main.go","offset":10,"limit":20}`},
		{"integral fraction", `{"path":"src/main.go","offset":10.0}`},
		{"invalid", `{"path":7,"offset":"x","extra":1}`},
	} {
		b.Run(bb.name, func(b *testing.B) {
			cs := compileSchemaWith([]byte(flatSchemas[2]), nil)
			args := []byte(bb.args)
			b.ReportAllocs()
			for b.Loop() {
				_ = cs.check("t", args)
			}
		})
	}
}

// TestWorkspaceToolsAreFlat: the workspace tools work in a program that
// does not link the validator. (The runtime's system and delegation tools
// are registered by every runtime.New, which linktest runs without it.)
func TestWorkspaceToolsAreFlat(t *testing.T) {
	w, err := OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, tl := range w.Tools() {
		if flat, b := newFlatSchema(mustDoc(t, string(tl.Parameters))); flat == nil {
			t.Errorf("%s: %v", tl.Name, b.error())
		}
	}
}
