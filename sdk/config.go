package ganglion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ConfigError is a problem with the extension's config: section, at Path:
// "$" for the section itself, "$.block" for its key block, "$.rules[2].name"
// deeper down. [API.Config] returns one for settings that do not fit the
// value it decodes into, and setup may return one of its own for a
// setting it refuses:
//
//	if len(cfg.Block) == 0 {
//		return &ganglion.ConfigError{Path: "$.block", Msg: "lists no pattern"}
//	}
//
// Returned from setup, its text is "config: $.block: lists no pattern",
// which the host reports at that place of the agent's config file, with
// its line and column, as it reports a native extension's settings (see
// ABI.md, "Config errors").
type ConfigError struct {
	Path string
	Msg  string
}

func (e *ConfigError) Error() string { return "config: " + e.Path + ": " + e.Msg }

// configProblem finds where the JSON config data does not fit the type
// of v (a pointer): the first unknown key, or the first value of the
// wrong kind, in document order. It returns nil when it finds none.
// encoding/json names neither the path of an unknown key nor the index
// of a list element; this walk does, with the words of the host's own
// config errors.
func configProblem(data []byte, v any) *ConfigError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil
	}
	if p := walkConfig(dec, t.Elem(), "$"); p != nil && p != errMalformed {
		return p
	}
	return nil
}

// errMalformed stops a walk at JSON the decoder cannot read: the decoder
// itself reports it.
var errMalformed = &ConfigError{}

// walkConfig reads one JSON value from dec and checks it against t.
func walkConfig(dec *json.Decoder, t reflect.Type, path string) *ConfigError {
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || tok == nil {
		return skipValue(dec, tok)
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return skipValue(dec, tok) // the type decodes itself
	}
	found := func(what string) *ConfigError {
		if p := skipValue(dec, tok); p != nil {
			return p
		}
		return &ConfigError{Path: path, Msg: "expected " + what + ", found " + describeToken(tok)}
	}
	switch d := tok.(type) {
	case json.Delim:
		switch {
		case d == '{' && t.Kind() == reflect.Struct:
			return walkStruct(dec, t, path)
		case d == '{' && t.Kind() == reflect.Map:
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return errMalformed
				}
				if p := walkConfig(dec, t.Elem(), keyPath(path, fmt.Sprint(k))); p != nil {
					return p
				}
			}
			return closeValue(dec)
		case d == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			for i := 0; dec.More(); i++ {
				if p := walkConfig(dec, t.Elem(), path+"["+strconv.Itoa(i)+"]"); p != nil {
					return p
				}
			}
			return closeValue(dec)
		}
	case string:
		if t.Kind() == reflect.String {
			return nil
		}
	case bool:
		if t.Kind() == reflect.Bool {
			return nil
		}
	case json.Number:
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
			return nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, err := strconv.ParseInt(d.String(), 10, t.Bits()); err == nil {
				return nil
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if _, err := strconv.ParseUint(d.String(), 10, t.Bits()); err == nil {
				return nil
			}
			return found("a non-negative integer")
		}
	}
	return found(kindWord(t))
}

// walkStruct checks the members of a JSON object, whose '{' was read,
// against struct t.
func walkStruct(dec *json.Decoder, t reflect.Type, path string) *ConfigError {
	fields := jsonFields(t)
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return errMalformed
		}
		key, _ := k.(string)
		ft, ok := fields[key]
		if !ok {
			// encoding/json matches a key to a field case-insensitively.
			for name, f := range fields {
				if strings.EqualFold(name, key) {
					ft, ok = f, true
					break
				}
			}
		}
		if !ok {
			return &ConfigError{Path: keyPath(path, key), Msg: fmt.Sprintf("unknown field %q (known: %s)", key, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))}
		}
		if p := walkConfig(dec, ft, keyPath(path, key)); p != nil {
			return p
		}
	}
	return closeValue(dec)
}

// closeValue reads the '}' or ']' that ends an object or a list.
func closeValue(dec *json.Decoder) *ConfigError {
	if _, err := dec.Token(); err != nil {
		return errMalformed
	}
	return nil
}

// jsonFields maps the JSON names of struct t's fields, those of embedded
// structs included, to their types, as encoding/json names them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// skipValue reads the rest of the value that starts with tok.
func skipValue(dec *json.Decoder, tok json.Token) *ConfigError {
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		for depth := 1; depth > 0; {
			t, err := dec.Token()
			if err != nil {
				return errMalformed
			}
			if d, ok := t.(json.Delim); ok {
				if d == '{' || d == '[' {
					depth++
				} else {
					depth--
				}
			}
		}
	}
	return nil
}

// keyPath is path's member key: "$.block", or "$[\"odd key\"]" for a key
// that is not a plain name.
func keyPath(path, key string) string {
	plain := key != ""
	for _, c := range key {
		plain = plain && (c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
	}
	if plain {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// kindWord names what a value of t is written as, in the host's words.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a mapping"
}

// describeToken names what a JSON value is, for "found ..." messages.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "a mapping"
		}
		return "a list"
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return "string " + strconv.Quote(v)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			return "number " + v.String()
		}
		return "integer " + v.String()
	}
	return "null"
}
