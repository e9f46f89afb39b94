// Command gohttp is a Go guest that calls out over HTTP, for the tests of
// the http_request import (http_test.go). Its turn hook reads the turn's
// input as a request, {"method", "url", "secret", "body", "repeat",
// "timeout_ms"} (the body repeated that many times),
// sends it (with the secret MOD_KEY in Authorization when "secret" is
// true) and answers the turn with "STATUS BODY"; a refused request fails
// the hook with "[CODE] MESSAGE".
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gohttp.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

func init() {
	ganglion.Register(ganglion.Manifest{Name: "gohttp", Version: "1.0.0", Secrets: []string{"MOD_KEY"},
		HTTP: []string{"http://granted.example", "http://get.example:8080"}}, func(api *ganglion.API) error {
		api.Pipeline.Turn(turn)
		return nil
	})
}

type request struct {
	Method    string `json:"method"`
	URL       string `json:"url"`
	Secret    bool   `json:"secret"`
	Body      string `json:"body"`
	Repeat    int    `json:"repeat"`
	TimeoutMS int64  `json:"timeout_ms"`
}

func turn(t *ganglion.Turn) error {
	var r request
	if err := json.Unmarshal([]byte(t.InputText()), &r); err != nil {
		return err
	}
	req := ganglion.HTTPRequest{Method: r.Method, URL: r.URL, Header: map[string]string{"X-Guest": "gohttp"}, Timeout: time.Duration(r.TimeoutMS) * time.Millisecond}
	if r.Body != "" {
		req.Body = []byte(strings.Repeat(r.Body, max(1, r.Repeat)))
	}
	if r.Secret {
		req.SecretHeader = map[string]ganglion.SecretHeader{"Authorization": {Secret: "MOD_KEY", Prefix: "Bearer "}}
	}
	res, err := t.HTTP(req)
	if err != nil {
		var e *ganglion.Error
		if errors.As(err, &e) {
			return fmt.Errorf("[%s] %s", e.Code, e.Message)
		}
		return err
	}
	return t.SetResult(ganglion.TurnResult{FinishReason: ganglion.FinishText,
		Response: ganglion.Message{Role: ganglion.RoleAssistant, Content: fmt.Sprintf("%d %s", res.Status, res.Body)}})
}
func main() {}
