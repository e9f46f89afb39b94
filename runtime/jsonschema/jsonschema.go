package jsonschema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

func init() {
	tool.JSONSchema = compile
}

// schemaURL is the location schemas are compiled at; it shows in some
// compile errors.
const schemaURL = "mem:///parameters.json"

// compile compiles a parameters schema document.
func compile(doc any) (v tool.Validator, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("parameters schema does not compile: internal error: %v", r)
		}
	}()
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("parameters schema does not compile: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		var ve *jsonschema.ValidationError
		if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
			return nil, fmt.Errorf("parameters schema does not compile: %s", strings.Join(violations(ve), "; "))
		}
		return nil, fmt.Errorf("parameters schema does not compile: %v", err)
	}
	return validator{sch}, nil
}

// refuseLoader keeps tool schemas self-contained: a $ref to a file or a URL
// would read the disk or the network on the model's behalf.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema refers to %s; tool schemas must be self-contained", url)
}

// validator is a compiled schema.
type validator struct {
	schema *jsonschema.Schema
}

func (val validator) Validate(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arguments could not be checked: internal error: %v", r)
		}
	}()
	verr := val.schema.Validate(v)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return fmt.Errorf("arguments do not match the schema: %v", verr)
	}
	lines := violations(ve)
	switch len(lines) {
	case 0:
		return errors.New("arguments do not match the schema")
	case 1:
		return fmt.Errorf("arguments do not match the schema: %s", lines[0])
	default:
		return fmt.Errorf("arguments do not match the schema:\n- %s", strings.Join(lines, "\n- "))
	}
}

// violation is one line of a schema error.
type violation struct {
	ptr  string
	text string
}

// violations flattens the library's error tree into one line per violation,
// "pointer: message", sorted and without duplicates. A failed anyOf or oneOf
// stays one line that lists what each alternative lacks.
func violations(ve *jsonschema.ValidationError) []string {
	var vs []violation
	collect(ve, &vs)
	slices.SortFunc(vs, func(a, b violation) int {
		return cmp.Or(cmp.Compare(a.ptr, b.ptr), cmp.Compare(a.text, b.text))
	})
	vs = slices.Compact(vs)
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = displayPointer(v.ptr) + ": " + v.text
	}
	return lines
}

func collect(ve *jsonschema.ValidationError, out *[]violation) {
	switch k := ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(ve.Causes) > 0 {
			*out = append(*out, violation{pointer(ve.InstanceLocation), alternatives(ve)})
			return
		}
	case *kind.AdditionalProperties:
		slices.Sort(k.Properties) // the library lists them in map order
	}
	if len(ve.Causes) == 0 {
		*out = append(*out, violation{pointer(ve.InstanceLocation), ve.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}

// alternatives renders a failed anyOf or oneOf as
// "'anyOf' failed: <what the first lacks>; or <what the second lacks>".
func alternatives(ve *jsonschema.ValidationError) string {
	ptr := pointer(ve.InstanceLocation)
	var sb strings.Builder
	sb.WriteString(ve.ErrorKind.LocalizedString(printer))
	for i, c := range ve.Causes {
		if i == 0 {
			sb.WriteString(": ")
		} else {
			sb.WriteString("; or ")
		}
		var vs []violation
		collect(c, &vs)
		slices.SortFunc(vs, func(a, b violation) int {
			return cmp.Or(cmp.Compare(a.ptr, b.ptr), cmp.Compare(a.text, b.text))
		})
		vs = slices.Compact(vs)
		for j, v := range vs {
			if j > 0 {
				sb.WriteString(", ")
			}
			if v.ptr != ptr {
				sb.WriteString(displayPointer(v.ptr))
				sb.WriteString(": ")
			}
			sb.WriteString(v.text)
		}
	}
	return sb.String()
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		sb.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return sb.String()
}

// printer renders the library's messages in English, as its Error methods do.
var printer = message.NewPrinter(language.English)

// displayPointer shows the root, whose pointer is empty, as "(root)".
func displayPointer(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}
