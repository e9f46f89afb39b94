package server

import (
	"bytes"
	"net/http"
	"strings"
)

// sseWriter writes server-sent events.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the headers of an event stream.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// event writes one event: its ID (none when id is ""), its name, and its
// data, one "data:" line per line of data.
func (s *sseWriter) event(id, name string, data []byte) {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + strings.NewReplacer("\n", " ", "\r", " ").Replace(name) + "\n")
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, _ = s.w.Write(b.Bytes())
}

// comment writes a comment line, which clients ignore.
func (s *sseWriter) comment(text string) {
	_, _ = s.w.Write([]byte(": " + text + "\n\n"))
	s.flush()
}

func (s *sseWriter) flush() { _ = s.rc.Flush() }
