package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/server"
)

// An app mounts the API in its own mux, beside its own routes, and sends
// a message with the token.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("agents: {helper: {fallback: {steps: [{text: 'hello, {{ .Input }}'}]}}}\n"), 0o644)
	cfg, _ := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents: [{name: helper}]\n"))
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	// A client that reconnects is sent the last 1,000 events it missed.
	srv, err := server.New(rt, server.WithToken("s3cret-token"), server.WithBacklog(1000))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	mux := http.NewServeMux()
	mux.Handle("/v1/", srv) // the API; the app keeps its other routes
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the app's own page") })
	ts := httptest.NewServer(mux)
	defer ts.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/v1/agents/helper/instances/demo/messages", stringsReader(`{"text": "world"}`))
	req.Header.Set("Authorization", "Bearer s3cret-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	var out struct {
		Result struct {
			Response struct{ Content string }
		}
	}
	decodeJSON(res.Body, &out)
	fmt.Println(res.Status, out.Result.Response.Content)
	// Output: 200 OK hello, world
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func decodeJSON(r io.Reader, v any) { _ = json.NewDecoder(r).Decode(v) }
