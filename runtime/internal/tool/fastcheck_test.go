package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/racecheck"
	"github.com/ganglion-dev/ganglion/pipeline"
)

const flatTestSchema = `{"type":"object","description":"d","properties":{
	"path":{"type":"string","description":"p"},
	"offset":{"type":"integer"},
	"ratio":{"type":"number"},
	"flag":{"type":["boolean","null"]},
	"opts":{"type":"object"},
	"list":{"type":"array"},
	"any":{"description":"anything"}},
	"required":["path"],"additionalProperties":false}`

// fullCheck runs the library path alone, without the fast check.
func fullCheck(t testing.TB, schema string, args []byte) error {
	cs := compileSchema([]byte(schema))
	if cs.err != nil {
		t.Fatal(cs.err)
	}
	saved := cs.flat
	cs.flat = nil
	defer func() { cs.flat = saved }()
	v, err := decodeObject(args)
	if err != nil {
		return err
	}
	if _, _, huge := hugeNumber(v, nil, false); huge {
		return errHuge
	}
	return cs.validate(v)
}

var errHuge = json.Unmarshal([]byte("x"), new(any))

func TestFlatSchemaShape(t *testing.T) {
	tests := []struct {
		name, schema string
		flat         bool
	}{
		{"typed properties", flatTestSchema, true},
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{"enum", `{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`, false},
		{"integer bounds", `{"type":"object","properties":{"a":{"type":"integer","minimum":1,"maximum":10}}}`, true},
		{"length bounds", `{"type":"object","properties":{"a":{"type":"string","minLength":1,"maxLength":3}}}`, true},
		{"fractional minimum", `{"type":"object","properties":{"a":{"type":"number","minimum":0.5}}}`, false},
		{"exclusiveMinimum", `{"type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":1}}}`, false},
		{"negative minLength", `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`, false},
		{"nested constraint", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`, false},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{"not an object schema", `{"type":"array"}`, false},
		{"false property", `{"type":"object","properties":{"a":false}}`, false},
		{"ref", `{"type":"object","properties":{"a":{"$ref":"#/x"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := compileSchema([]byte(tt.schema))
			if got := cs.flat != nil; got != tt.flat {
				t.Errorf("flat = %v, want %v", got, tt.flat)
			}
		})
	}
}

// flatCase is arguments and whether the fast check decides them alone.
type flatCase struct {
	args   string
	accept bool
}

// checkFlatAccepts asserts what schema's fast check decides alone, and that
// whatever it accepts the library accepts too; it returns the compiled
// schema.
func checkFlatAccepts(t *testing.T, schema string, tests []flatCase) *compiledSchema {
	t.Helper()
	cs := compileSchema([]byte(schema))
	if cs.flat == nil {
		t.Fatalf("the schema is not flat: %s", schema)
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			got := cs.flat.accepts([]byte(tt.args))
			if got != tt.accept {
				t.Errorf("accepts = %v, want %v", got, tt.accept)
			}
			if got {
				if err := fullCheck(t, schema, []byte(tt.args)); err != nil {
					t.Errorf("the fast check accepted what the library refuses: %v", err)
				}
			}
		})
	}
	return cs
}

func TestFlatSchemaAcceptsOnlyWhatTheLibraryAccepts(t *testing.T) {
	tests := []flatCase{
		{`{"path":"a"}`, true},
		{` { "path" : "a" , "offset" : 3 , "flag" : null } `, true},
		{`{"path":"a","ratio":1.5,"flag":true,"opts":{"x":[1,{"y":"}"}]},"list":[1,"]",{}],"any":3}`, true},
		{`{"path":"a","offset":-7,"ratio":2e10}`, true},
		{`{"path":"a\"b"}`, true},
		{`{}`, false},                             // missing required
		{`{"path":3}`, false},                     // wrong type
		{`{"path":"a","offset":1.0}`, false},      // integral? the library decides
		{`{"path":"a","offset":"3"}`, false},      // wrong type
		{`{"path":"a","extra":1}`, false},         // closed object
		{`{"pa\u0074h":"a"}`, false},              // escaped key
		{`{"path":"a","list":[1e999999]}`, false}, // huge nested number
		{`{"path":"a","ratio":1e401}`, false},     // huge exponent
		{`{"path":"a"`, false},                    // not JSON
		{`["path"]`, false},                       // not an object
		{`{"path":"a","flag":"yes"}`, false},      // not in the type list
	}
	checkFlatAccepts(t, flatTestSchema, tests)
}

// TestFlatCheckRefusesMalformedJSON: the fast check reads its input once,
// with no json.Valid before it, so it must refuse all that json.Valid
// refuses. Each case would pass the schema if it were JSON ("any" takes
// any value); the library then gives the syntax error.
func TestFlatCheckRefusesMalformedJSON(t *testing.T) {
	tests := []string{
		`{"path":"a",}`,             // trailing comma
		`{"path":"a" "any":1}`,      // missing comma
		`{"path":"a",,"any":1}`,     // two commas
		`{"path" "a"}`,              // missing colon
		`{"path":"a"}x`,             // content after the object
		`{"path":"a"}{}`,            // a second value
		`{"path":"a","any":tru}`,    // short literal
		`{"path":"a","any":nul}`,    //
		`{"path":"a","any":falsey}`, // long literal
		`{"path":"a","any":01}`,     // leading zero
		`{"path":"a","any":-}`,      // sign alone
		`{"path":"a","any":1.}`,     // fraction without digits
		`{"path":"a","any":.5}`,     // fraction without integer
		`{"path":"a","any":1e}`,     // exponent without digits
		`{"path":"a","any":1e+}`,    //
		`{"path":"a","any":+1}`,     // plus sign
		`{"path":"a","any":0x10}`,   // hex
		`{"path":"a","any":[1,]}`,   // trailing comma in an array
		`{"path":"a","any":[1 2]}`,  // missing comma in an array
		`{"path":"a","any":[1}`,     // mismatched bracket
		`{"path":"a","any":{"x"}}`,  // member without a value
		`{"path":"a","any":{1:2}}`,  // key not a string
		`{"path":"a","any":{"x":1,}}`,
		"{\"path\":\"a\tb\"}",  // control character in a string
		"{\"path\":\"a\x00\"}", //
		`{"path":"a\q"}`,       // unknown escape
		`{"path":"a\u12"}`,     // short \u escape
		`{"path":"a\u12g4"}`,   // not hex
		`{"path":"a\`,          // cut in an escape
		`{"path":"a`,           // cut in a string
		`{"path":"a","any":[`,  // cut in an array
		`{"path":'a'}`,         // single quotes
		`{path:"a"}`,           // bare key
	}
	cs := compileSchema([]byte(flatTestSchema))
	for _, args := range tests {
		if json.Valid([]byte(args)) {
			t.Errorf("%q: the case is valid JSON; it tests nothing", args)
		}
		if cs.flat.accepts([]byte(args)) {
			t.Errorf("accepts(%q) = true, want false", args)
		}
		err := CheckArguments(pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "t", Parameters: []byte(flatTestSchema)}}, []byte(args))
		if err == nil || !strings.HasPrefix(err.Error(), "arguments are not valid JSON: ") {
			t.Errorf("CheckArguments(%q) = %v, want the library's syntax error", args, err)
		}
	}
	// And what json.Valid takes that the old scanner skipped loosely.
	checkFlatAccepts(t, flatTestSchema, []flatCase{
		{`{"path":"a\/\b\f\n\r\t\\\"\u00e9","any":[0,-0,0.5,-1.5e-3,1E+2,true,false,null,{},[],{"k":[{}]}]}`, true},
		{"\t\r\n {\"path\" :\n\"a\" }\n", true},
		// Nesting deeper than maxFastDepth is left to the library.
		{`{"path":"a","any":` + strings.Repeat("[", maxFastDepth) + strings.Repeat("]", maxFastDepth) + `}`, true},
		{`{"path":"a","any":` + strings.Repeat("[", maxFastDepth+1) + strings.Repeat("]", maxFastDepth+1) + `}`, false},
	})
}

// boundedTestSchema has the workspace tools' keywords: length and integer bounds.
const boundedTestSchema = `{"type":"object","properties":{
	"path":{"type":"string","minLength":1,"maxLength":8},
	"offset":{"type":"integer","minimum":1,"maximum":1000},
	"ratio":{"type":["number","string"],"minimum":-5}},
	"required":["path"],"additionalProperties":false}`

func TestFlatSchemaBounds(t *testing.T) {
	tests := []flatCase{
		{`{"path":"a"}`, true},
		{`{"path":"abcdefgh","offset":1000}`, true},
		{`{"path":"héllo","offset":1}`, true}, // 5 characters, 6 bytes
		{`{"path":"日本語日本語日本"}`, true},         // 8 characters, 24 bytes
		{`{"path":"","offset":5}`, false},     // too short
		{`{"path":"abcdefghi"}`, false},       // too long
		{`{"path":"a\u0062"}`, false},         // escape: the library counts
		{`{"path":"a","offset":0}`, false},    // below minimum
		{`{"path":"a","offset":1001}`, false}, // above maximum
		{`{"path":"a","offset":-3}`, false},
		{`{"path":"a","offset":10.0}`, false},                  // integral? the library decides
		{`{"path":"a","offset":1e2}`, false},                   // exponent: the library
		{`{"path":"a","offset":123456789012345678901}`, false}, // beyond int64
		{`{"path":"a","ratio":-5}`, true},
		{`{"path":"a","ratio":-6}`, false},
		{`{"path":"a","ratio":-5.5}`, false},      // fraction: the library
		{`{"path":"a","ratio":"any text"}`, true}, // minimum does not apply to strings
	}
	cs := checkFlatAccepts(t, boundedTestSchema, tests)
	if racecheck.Enabled {
		return // allocation counts are asserted in CI's pass without -race
	}
	if n := testing.AllocsPerRun(100, func() { cs.flat.accepts([]byte(`{"path":"héllo","offset":42,"ratio":-1}`)) }); n != 0 {
		t.Errorf("allocs = %v, want 0", n)
	}
}

// TestCheckArgumentsErrorsUnchanged: refusals still read as the library's.
func TestCheckArgumentsErrorsUnchanged(t *testing.T) {
	tool := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "t", Parameters: []byte(flatTestSchema)}}
	err := CheckArguments(tool, []byte(`{"path":3}`))
	if err == nil || err.Error() != "arguments do not match the schema: /path: got number, want string" {
		t.Fatalf("err = %v", err)
	}
}

func TestFlatCheckAllocatesNothing(t *testing.T) {
	if racecheck.Enabled {
		t.Skip("the race detector allocates on its own; CI asserts this in its pass without -race")
	}
	cs := compileSchema([]byte(flatTestSchema))
	args := []byte(`{"path":"notes.txt","offset":10,"ratio":0.5,"flag":true,"list":[1,2]}`)
	if n := testing.AllocsPerRun(100, func() { cs.flat.accepts(args) }); n != 0 {
		t.Errorf("allocs = %v, want 0", n)
	}
}

// FuzzFlatCheck: whatever the fast check accepts, the library accepts.
func FuzzFlatCheck(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"a","offset":1.0}`, `{"path":"a","opts":{"a":[1,"x"]}}`, `{"pa\u0074h":1}`, `{}`, `[]`, `{"path":"a","list":[-0.0e-5]}`} {
		f.Add([]byte(s))
	}
	schemas := []string{flatTestSchema, boundedTestSchema}
	var flats []*flatSchema
	for _, schema := range schemas {
		cs := compileSchema([]byte(schema))
		if cs.flat == nil {
			f.Fatalf("schema is not flat: %s", schema)
		}
		flats = append(flats, cs.flat)
	}
	f.Add([]byte(`{"path":"héllo","offset":1000,"ratio":-5}`))
	f.Add([]byte(`{"path":"","offset":0}`))
	for _, s := range []string{`{"path":"a",}`, `{"path":"a"}x`, `{"path":"a","any":01}`, `{"path":"a\u12"}`, `{"path":"a","list":[1,]}`, "{\"path\":\"\x01\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		for i, flat := range flats {
			if !flat.accepts(args) {
				continue
			}
			if !json.Valid(args) {
				t.Fatalf("fast check accepted %q, which is not JSON", args)
			}
			if err := fullCheck(t, schemas[i], bytes.Clone(args)); err != nil {
				t.Fatalf("fast check accepted %q for %s; library says %v", args, schemas[i], err)
			}
		}
	})
}
