package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzReadJSON checks readJSON against the standard library: it takes a
// body exactly when the body is one valid JSON value (json.Valid) that
// decodes into the call's request with no unknown field; whatever it
// refuses is a 400 or a 413, never a 500.
func FuzzReadJSON(f *testing.F) {
	for _, s := range []string{`{"text": "x"}`, `{"text":"x"} {"text":"y"}`, "{\"text\":\"x\"}\n\t", `{"text":"x"}]`, `{"text":"x"}}`,
		`{"txt": "x"}`, `hi`, ``, ` `, `{"text": "x", "metadata": {"a": 1}} x`, `null`, `[]`, "{\"text\":\"\\u0000\"}\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/agents/a/instances/k/messages", bytes.NewReader(body))
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		var got messageRequest
		ok := readJSON(w, r, &got)

		var want messageRequest
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		valid := json.Valid(body) && dec.Decode(&want) == nil
		switch {
		case ok != valid:
			t.Fatalf("readJSON(%q) = %v, want %v (%d %s)", body, ok, valid, w.Code, w.Body)
		case !ok && w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge:
			t.Fatalf("readJSON(%q) answered %d", body, w.Code)
		case !ok && !strings.Contains(w.Body.String(), `"code":"invalid_request"`) && !strings.Contains(w.Body.String(), `"code":"too_large"`):
			t.Fatalf("readJSON(%q) answered %s", body, w.Body)
		}
	})
}
