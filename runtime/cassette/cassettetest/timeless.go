package cassettetest

import (
	"bytes"
	"encoding/json"
	"strings"
)

// timeless renders v as JSON without the fields that hold times and
// durations: keys ending in "_at" or "_ms", and "time". A replay runs on
// the recorded clock, but durations are measured, and a transcript that
// holds times is one nobody reads for its content.
func timeless(v any) string {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return "(unmarshalable: " + err.Error() + ")"
		}
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&x) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(strip(x)) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func strip(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			if k == "time" || strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_ms") {
				delete(t, k)
				continue
			}
			t[k] = strip(v)
		}
	case []any:
		for i := range t {
			t[i] = strip(t[i])
		}
	}
	return x
}
