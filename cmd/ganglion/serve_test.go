package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
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

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/runtime"
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

// TestServeSaysWhere: serve prints where the API and the web console
// are, and a call without the token is told where the token is kept: the
// API's calls and /mcp alike.
func TestServeSaysWhere(t *testing.T) {
	t.Parallel()
	dir := project(t, testConfig)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBinary(t), "serve", dir, "--addr", "127.0.0.1:0")
	cmd.Env = childEnv()
	out, err := cmd.StdoutPipe()
	must(t, err)
	var errb strings.Builder
	cmd.Stderr = &errb
	must(t, cmd.Start())
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var lines []string
	for len(lines) < 3 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go io.Copy(io.Discard, out)
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(strings.Join(lines, "\n"))
	token := regexp.MustCompile(`[0-9a-f]{64}`).FindString(strings.Join(lines, "\n"))
	tokenFile := filepath.Join(dir, ".ganglion", "data.token")
	want := []string{
		"serving the agents of " + dir + " on http://" + addr + "/v1/",
		"web console: http://" + addr + "/",
		"token (shown once; kept in " + tokenFile + "): " + token,
	}
	if addr == "" || token == "" {
		t.Fatalf("serve printed no address or token:\n%s\nstderr:\n%s", strings.Join(lines, "\n"), errb.String())
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("serve printed:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	const unauthorized = `{"error":{"code":"unauthorized","status":401,"message":"this call needs the server's token: Authorization: Bearer TOKEN (it is kept in .ganglion/data.token, beside ganglion.yaml)"}}` + "\n"
	for _, path := range []string{"/v1/agents", "/mcp"} {
		req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer wrong")
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || string(b) != unauthorized {
			t.Errorf("%s without the token: %s\n%s\nwant\n%s", path, res.Status, b, unauthorized)
		}
	}
}

// startServe runs ganglion serve on a free loopback port of dir, and
// returns its address, the token it printed ("" if none), and a function
// that interrupts it and returns how it ended.
func startServe(t *testing.T, dir string) (addr, token string, stop func() result) {
	t.Helper()
	return startServeWith(t, dir, childEnv())
}

// startServeWith is startServe with the environment env and more
// arguments.
func startServeWith(t *testing.T, dir string, env []string, args ...string) (addr, token string, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	cmd := exec.CommandContext(ctx, cliBinary(t), append([]string{"serve", dir, "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
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
	shown := regexp.MustCompile(`^token \(shown once; kept in .*\.token\): ([0-9a-f]{64})$`)
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
	// A webhook whose secret is not in the environment.
	hooked := project(t, testConfig+"webhooks:\n  - url: https://hooks.example.com/ganglion\n    secret_env: GANGLION_TEST_HOOK_SECRET\n")
	r := exe(t, hooked, "", "serve", hooked, "--addr", "127.0.0.1:0")
	if want := "ganglion: webhooks[0] (https://hooks.example.com/ganglion): the environment variable GANGLION_TEST_HOOK_SECRET, its signing secret, is not set\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("a webhook without its secret: exit %d, stderr:\n%s\nwant\n%s", r.code, r.stderr, want)
	}
}

// TestCommandsReachServer: while serve holds the data directory, pending,
// answer, provide, reject, tasks and history on the same config talk to
// it, with the same output as on their own: the answer streams the
// resumed turn, a provided value reaches the tool and shows nowhere, a
// rejected required dependency exits 0 saying the task failed. After the
// server stops, the commands open the directory themselves again.
func TestCommandsReachServer(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	addr, token, stop := startServe(t, dir)
	send := func(agent, text string) string {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/agents/"+agent+"/instances/default/messages", strings.NewReader(`{"text": "`+text+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if body := send("asker", "price it"); !strings.Contains(body, `"finish_reason":"paused"`) {
		t.Fatalf("asker's turn = %s", body)
	}
	r := exe(t, dir, "", "pending", dir, "--json")
	items := parsePending(t, r.stdout)
	if r.code != exitOK || len(items) != 1 || items[0].Kind != "question" {
		t.Fatalf("pending through the server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = exe(t, dir, "", "answer", dir, items[0].ID, "Freemium")
	check(t, "answer through the server", r, exitOK, ptr(askResumed), ptr("$ID of asker/default answered: Freemium\n"), items[0].ID)

	send("keeper", "go")
	key := onlyOpen(t, dir, "keeper")
	r = exe(t, dir, "sk-proj-served-0123456789abcdef\n", "provide", dir, key)
	check(t, "provide through the server", r, exitOK, ptr(keyResumed), ptr("$ID of keeper/default provided: OPENAI_API_KEY (api_key)\n"), key)
	r = exe(t, dir, "", "history", dir, "--agent", "keeper", "--json")
	if r.code != exitOK || !strings.Contains(r.stdout, "[secret OPENAI_API_KEY]") || strings.Contains(r.stdout, "served-0123456789") {
		t.Errorf("history through the server: exit %d\n%s", r.code, r.stdout)
	}

	send("strict", "where?")
	r = exe(t, dir, "", "tasks", dir)
	if r.code != exitOK || r.stderr != "no open tasks\n" {
		t.Errorf("tasks through the server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	q := onlyOpen(t, dir, "strict")
	r = exe(t, dir, "", "answer", dir, q, "")
	if r.code != exitUsage && r.code != exitError || !strings.Contains(r.stderr, "invalid") {
		t.Errorf("an empty answer to a required question: exit %d\n%s", r.code, r.stderr)
	}

	stop()
	r = exe(t, dir, "", "pending", dir, "--json")
	if r.code != exitOK || len(parsePending(t, r.stdout)) != 1 {
		t.Errorf("pending after the server stopped: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// onlyOpen returns the ID of agent's only open item, listed through
// whatever holds dir.
func onlyOpen(t *testing.T, dir, agent string) string {
	t.Helper()
	r := exe(t, dir, "", "pending", dir, "--json", "--agent", agent)
	items := parsePending(t, r.stdout)
	if r.code != exitOK || len(items) != 1 {
		t.Fatalf("pending of %s: exit %d\n%s%s", agent, r.code, r.stdout, r.stderr)
	}
	return items[0].ID
}

// TestRunThroughServer: ganglion run on a config a server holds sends the
// message through it, streams the turn, sees a delegation chain through
// to its answer, and says how to answer a pause, as it does on its own.
func TestRunThroughServer(t *testing.T) {
	t.Parallel()
	dir, _ := delegationProject(t, delegationScript) // its data in the default place
	_, _, stop := startServe(t, dir)
	defer stop()
	r := exe(t, dir, "", "run", dir, "build a parser")
	if r.code != exitOK {
		t.Fatalf("run through the server: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"[task] lead → coder: write the parser\n", "[task] coder reported: parser written\n", "Delegated.\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasSuffix(r.stdout, "Both done: the parser is written and tested.\n") {
		t.Errorf("stdout does not end with the chain's answer:\n%s", r.stdout)
	}
	r = exe(t, dir, "", "run", dir, "--agent", "nobody", "hi")
	if r.code != exitError || !strings.Contains(r.stderr, `unknown agent "nobody"`) {
		t.Errorf("an unknown agent through the server: exit %d\n%s", r.code, r.stderr)
	}
}

// TestServeCluster: two serve processes given --cluster run one set of
// agents: a turn sent to either runs on the process that owns the
// instance, and both show the one history.
func TestServeCluster(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	dir := project(t, testConfig)
	env := append(childEnv(), runtime.SecretKeyEnv+"="+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	a, tokenA, stopA := startServeWith(t, dir, env, "--cluster", srv.ClientURL(), "--data", filepath.Join(dir, "a"))
	b, tokenB, stopB := startServeWith(t, dir, env, "--cluster", srv.ClientURL(), "--data", filepath.Join(dir, "b"))
	call := func(addr, token, method, path, body string) string {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s\n%s", method, path, res.Status, out)
		}
		return string(out)
	}
	if tokenA == "" || tokenB == "" || tokenA == tokenB {
		t.Fatalf("tokens %q and %q: want one each", tokenA, tokenB)
	}
	const path = "/v1/agents/second/instances/default"
	call(b, tokenB, "POST", path+"/messages", `{"text": "first, through b"}`)
	call(a, tokenA, "POST", path+"/messages", `{"text": "then through a"}`)
	for _, p := range []struct{ addr, token string }{{a, tokenA}, {b, tokenB}} {
		h := call(p.addr, p.token, "GET", path+"/history", "")
		if !strings.Contains(h, "first, through b") || !strings.Contains(h, "then through a") {
			t.Errorf("history through %s:\n%s", p.addr, h)
		}
	}
	for _, stop := range []func() result{stopA, stopB} {
		if r := stop(); r.code != exitOK {
			t.Errorf("serve exited %d:\n%s", r.code, r.stderr)
		}
	}
}

// TestServeClusterStopFinishesRoutedResume: a question asked through
// serve process a is answered through b, so the resume turn runs on a, the
// owner; a is stopped (SIGINT) while the resume's command runs. The stop
// gives the turn its --shutdown-timeout: the command finishes, a exits
// cleanly, and the answerer on b gets the resume's answer.
func TestServeClusterStopFinishesRoutedResume(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	dir := project(t, `workspace: workspace
model: {provider: scripted, script: script.yaml}
agents:
  - name: asker
    tools: [execute_command]
    extensions: [{name: protocol}]
`)
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  asker:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: business
              question: Go on?
              options: ["yes", "no"]
              required: true
              [/USER_QUESTION]
      - steps:
          - tool_calls: [{name: execute_command, id: c1, args: {command: "touch started && sleep 2 && echo slept"}}]
          - text: "done: {{ .LastMessage }}"
`), 0o644))
	env := append(childEnv(), runtime.SecretKeyEnv+"="+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	a, tokenA, stopA := startServeWith(t, dir, env, "--cluster", srv.ClientURL(), "--data", filepath.Join(dir, "a"))
	b, tokenB, stopB := startServeWith(t, dir, env, "--cluster", srv.ClientURL(), "--data", filepath.Join(dir, "b"))
	call := func(addr, token, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	if code, out := call(a, tokenA, "POST", "/v1/agents/asker/instances/k/messages", `{"text": "start"}`); !strings.Contains(out, "paused") {
		t.Fatalf("the first turn through a: %d %s; want it paused", code, out)
	}
	code, out := call(b, tokenB, "GET", "/v1/pending?agent=asker", "")
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != http.StatusOK || err != nil || len(list.Items) != 1 {
		t.Fatalf("the pending items through b: %d %s (%v)", code, out, err)
	}
	type reply struct {
		code int
		body string
	}
	answered := make(chan reply, 1)
	go func() {
		code, out := call(b, tokenB, "POST", "/v1/pending/"+list.Items[0].ID+"/answer", `{"answer": "yes"}`)
		answered <- reply{code, out}
	}()
	started := filepath.Join(dir, "workspace", "started")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resume's command never started")
		}
	}
	stopping := time.Now()
	if r := stopA(); r.code != exitOK {
		t.Errorf("a exited %d:\n%s", r.code, r.stderr)
	}
	t.Logf("a stopped %v after SIGINT, its resume's command (2 s) having run", time.Since(stopping))
	if r := <-answered; r.code != http.StatusOK || !strings.Contains(r.body, "done: ") || !strings.Contains(r.body, "slept") {
		t.Errorf("the answer through b: %d %s; want the resume's answer", r.code, r.body)
	}
	if r := stopB(); r.code != exitOK {
		t.Errorf("b exited %d:\n%s", r.code, r.stderr)
	}
}
