package server

import (
	"embed"
	"net/http"
)

// The console: one page and its script and style, embedded, so that it
// needs no network but the server's. The page itself is public (it holds
// nothing); everything it shows comes from the API, with the token.
//
//go:embed console/index.html console/console.js console/console.css
var consoleFiles embed.FS

// console serves the web console's files.
func (s *Server) console(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console takes GET", http.StatusMethodNotAllowed)
		return
	}
	name, ctype := "", ""
	switch r.URL.Path {
	case "/", "/console", "/console/":
		name, ctype = "console/index.html", "text/html; charset=utf-8"
	case "/console.js":
		name, ctype = "console/console.js", "text/javascript; charset=utf-8"
	case "/console.css":
		name, ctype = "console/console.css", "text/css; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := consoleFiles.ReadFile(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	// Only this server's script, style and API; no framing by another
	// site; no sniffing; no referrer.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.Write(b)
}
