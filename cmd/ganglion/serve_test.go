package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServe: ganglion serve prints where it listens and, on the first
// start only, the token it made (kept mode 0600 beside the data key); the
// API answers with the token and refuses without it; Ctrl-C stops it
// cleanly; a second start reads the same token.
func TestServe(t *testing.T) {
	t.Parallel()
	dir := project(t, testConfig)
	addr, token, stop := startServe(t, dir)
	if token == "" {
		t.Fatal("the first start printed no token")
	}
	tokenFile := filepath.Join(dir, ".ganglion", "data.token")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(tokenFile); strings.TrimSpace(string(b)) != token {
		t.Errorf("the token file holds %q, the server printed %q", b, token)
	}
	call := func(method, path, body, tok string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := call("POST", "/v1/agents/helper/instances/default/messages", `{"text": "over http"}`, token); code != 200 || !strings.Contains(body, `"content":"echo over http"`) {
		t.Errorf("message = %d %s", code, body)
	}
	if code, _ := call("GET", "/v1/agents", "", ""); code != 401 {
		t.Errorf("without the token: %d", code)
	}
	if code, body := call("GET", "/v1/agents/helper/instances/default/history", "", token); code != 200 || !strings.Contains(body, "over http") {
		t.Errorf("history = %d %s", code, body)
	}
	if r := stop(); r.code != exitOK || !strings.Contains(r.stderr, "stopping") {
		t.Errorf("after Ctrl-C: exit %d\nstderr:\n%s", r.code, r.stderr)
	}

	_, again, stop := startServe(t, dir)
	if again != "" {
		t.Errorf("the second start printed the token again")
	}
	stop()
}

// startServe runs ganglion serve on a free loopback port of dir, and
// returns its address, the token it printed ("" if none), and a function
// that interrupts it and returns how it ended.
func startServe(t *testing.T, dir string) (addr, token string, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	cmd := exec.CommandContext(ctx, cliBinary(t), "serve", dir, "--addr", "127.0.0.1:0")
	cmd.Env = childEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	serving := regexp.MustCompile(`^serving the agents of .* on http://(127\.0\.0\.1:\d+)/v1/$`)
	shown := regexp.MustCompile(`^token \(shown once; kept in .*data\.token\): ([0-9a-f]{64})$`)
	for sc.Scan() {
		line := sc.Text()
		if m := serving.FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
		if m := shown.FindStringSubmatch(line); m != nil {
			token = m[1]
		}
		if strings.HasPrefix(line, "token") {
			break
		}
	}
	if addr == "" {
		cancel()
		cmd.Wait()
		t.Fatalf("serve printed no address; stderr:\n%s", errb.String())
	}
	go io.Copy(io.Discard, out)
	return addr, token, func() result {
		defer cancel()
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		return result{cmd.ProcessState.ExitCode(), "", errb.String()}
	}
}

// TestServeRefuses: serve refuses to expose the API beyond loopback
// without TLS, and half a TLS setup.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	dir := project(t, testConfig)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces without TLS", []string{"--addr", "0.0.0.0:0"},
			"ganglion: --addr 0.0.0.0:0 is reachable from other machines, and without TLS the token would cross the network in clear: give --tls-cert and --tls-key, or listen on loopback (127.0.0.1:7070)\n"},
		{"a certificate without its key", []string{"--tls-cert", "cert.pem"}, "ganglion: --tls-cert and --tls-key go together: give both, or neither\n"},
		{"not an address", []string{"--addr", "7070"}, `ganglion: --addr "7070": want HOST:PORT, as in 127.0.0.1:7070: address 7070: missing port in address` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exe(t, dir, "", append([]string{"serve", dir}, tt.args...)...)
			if r.code != exitUsage || r.stderr != tt.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and\n%s", r.code, r.stderr, exitUsage, tt.want)
			}
		})
	}
}
