package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// mcpClient serves dir's agents as ganglion mcp does, on a runtime in
// memory, and returns a client session of the SDK's on it, over in-memory
// transports.
func mcpClient(t *testing.T, dir string) *mcp.ClientSession {
	t.Helper()
	cs, _ := mcpSession(t, dir, nil, nil)
	return cs
}

// mcpSession is mcpClient with the client's options and the session's
// (its protocol version); it returns the runtime too.
func mcpSession(t *testing.T, dir string, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, *runtime.Runtime) {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	must(t, err)
	rt, err := runtime.New(t.Context(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	must(t, err)
	t.Cleanup(func() { rt.Close() })
	m := newMCPAgents(rt, place(dir, ""), slog.New(slog.DiscardHandler))
	t.Cleanup(m.close)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := m.server().Connect(t.Context(), st, nil)
	must(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(t.Context(), ct, sopts)
	must(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs, rt
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	must(t, err)
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}

// TestMCPServesAgents: each agent is a tool that takes a message and an
// instance and returns the agent's answer; the instance keeps the
// conversation.
func TestMCPServesAgents(t *testing.T) {
	dir := project(t, testConfig)
	cs := mcpClient(t, dir)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		must(t, err)
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"message"`) || !strings.Contains(string(schema), `"instance"`) {
			t.Errorf("%s's schema: %s", tool.Name, schema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"helper", "second"}) {
		t.Fatalf("tools %v", names)
	}
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper: %q (error %v)", text, res.IsError)
	}
	if text, res := callText(t, cs, "second", map[string]any{"message": "hi", "instance": "k2"}); res.IsError || text != "second here" {
		t.Errorf("second: %q (error %v)", text, res.IsError)
	}
	if text, res := callText(t, cs, "helper", map[string]any{"message": "  "}); !res.IsError || text != "message is empty: say what to ask the agent" {
		t.Errorf("an empty message: %q (error %v)", text, res.IsError)
	}
}

// TestMCPPausedTurn: a turn that pauses returns what it waits for, with
// the pending item's ID and the command that answers it.
func TestMCPPausedTurn(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents:\n  - name: asker\n    extensions: [{name: protocol}]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  asker:
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: clarification
            question: Which file?
            required: true
            [/USER_QUESTION]
`), 0o644))
	cs := mcpClient(t, dir)
	text, res := callText(t, cs, "asker", map[string]any{"message": "read something"})
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	id := regexp.MustCompile(`p-[0-9a-f]{12}`).FindString(text)
	want := "The agent paused: it waits for a human.\n" +
		"- " + id + ": a question of asker/mcp: Which file? (required)\n" +
		"  answer it: ganglion answer " + dir + " " + id + " ANSWER\n" +
		"Once it is answered, call this tool again with the same instance (\"mcp\"): that call returns the agent's answer, and does not send its message.\n"
	if id == "" || text != want {
		t.Errorf("paused result:\n%s\nwant:\n%s", text, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"status":"paused"`) || !strings.Contains(string(sc), `"id":"`+id+`"`) {
		t.Errorf("structured content: %s", sc)
	}
}

// TestMCPOverStdio: `ganglion mcp DIR`, a real process, answers an MCP
// client on its standard input and output, and exits when it closes.
func TestMCPOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	cmd := exec.Command(cliBinary(t), "mcp", dir)
	cmd.Env = childEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"})
	if res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over stdio: %q (error %v)\nstderr: %s", text, res.IsError, stderr.String())
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\nstderr: %s", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the server process: %v\nstderr: %s", cmd.ProcessState, stderr.String())
	}
}

// TestMCPOverHTTP: `ganglion mcp --http` serves the agents over
// streamable HTTP at the address it prints, behind the server's token
// (made on the first start, as serve makes it), beside the HTTP API and
// the web console; the other commands reach the agents through it.
func TestMCPOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	lines, stop := startMCPHTTP(t, dir, "--http", "127.0.0.1:0")
	addr := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(lines[0])
	token := regexp.MustCompile(`[0-9a-f]{64}`).FindString(lines[2])
	tokenFile := filepath.Join(dir, ".ganglion", "data.token")
	want := []string{
		"ganglion: serving " + dir + "'s agents over MCP at http://" + addr + "/mcp",
		"ganglion: the HTTP API at http://" + addr + "/v1/, the web console at http://" + addr + "/",
		"ganglion: token (shown once; kept in " + tokenFile + "): " + token,
	}
	if addr == "" || token == "" || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("mcp --http printed:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport(token)}}, nil)
	must(t, err)
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over HTTP: %q (error %v)", text, res.IsError)
	}
	if r := exe(t, dir, "", "history", dir, "--agent", "helper", "--instance", "mcp"); r.code != exitOK || !strings.Contains(r.stdout, "It says: hello world") {
		t.Errorf("history through ganglion mcp: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	must(t, cs.Close())
	if r := stop(); r.code != exitOK {
		t.Errorf("mcp --http after Ctrl-C: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ganglion", "data.server")); !os.IsNotExist(err) {
		t.Errorf("data.server after mcp stopped: %v", err)
	}
	lines, stop = startMCPHTTP(t, dir, "--http", "127.0.0.1:0")
	defer stop()
	if want := "ganglion: token: in " + tokenFile; lines[2] != want {
		t.Errorf("the second start printed %q, want %q", lines[2], want)
	}
}

// startMCPHTTP starts ganglion mcp DIR with args, and returns the first
// three lines it printed and a function that interrupts it.
func startMCPHTTP(t *testing.T, dir string, args ...string) ([]string, func() result) {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"mcp", dir}, args...)...)
	cmd.Env = childEnv()
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The lines come as they are printed; a process that prints fewer
	// fails the test rather than hang it.
	got := make(chan string, 3)
	var rest strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		br := bufio.NewReader(stderr)
		for n := 0; n < 3; n++ {
			line, err := br.ReadString('\n')
			if err != nil {
				close(got)
				return
			}
			got <- strings.TrimSuffix(line, "\n")
		}
		io.Copy(&rest, br)
	}()
	var lines []string
	for len(lines) < 3 {
		select {
		case line, ok := <-got:
			if !ok {
				t.Fatalf("ganglion mcp %v printed %q, then ended", args, lines)
			}
			lines = append(lines, line)
		case <-time.After(60 * time.Second):
			t.Fatalf("ganglion mcp %v printed %q, then nothing for a minute", args, lines)
		}
	}
	return lines, func() result {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		<-copied
		return result{cmd.ProcessState.ExitCode(), "", rest.String()}
	}
}

// TestMCPHTTPRefuses: ganglion mcp --http follows serve's rules: an
// address beyond loopback needs TLS, TLS needs both its files, and only
// --http serves it.
func TestMCPHTTPRefuses(t *testing.T) {
	t.Parallel()
	dir := project(t, testConfig)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces without TLS", []string{"--http", "0.0.0.0:0"},
			"ganglion: --http 0.0.0.0:0 is reachable from other machines, and without TLS the token would cross the network in clear: give --tls-cert and --tls-key, or listen on loopback (127.0.0.1:7070)\n"},
		{"no host without TLS", []string{"--http", ":8080"},
			"ganglion: --http :8080 is reachable from other machines, and without TLS the token would cross the network in clear: give --tls-cert and --tls-key, or listen on loopback (127.0.0.1:7070)\n"},
		{"a certificate without its key", []string{"--http", "127.0.0.1:0", "--tls-cert", "cert.pem"}, "ganglion: --tls-cert and --tls-key go together: give both, or neither\n"},
		{"TLS over stdio", []string{"--tls-cert", "cert.pem", "--tls-key", "key.pem"}, "ganglion: --tls-cert and --tls-key are for --http: over stdio, the HTTP API listens on loopback only\n"},
		{"not an address", []string{"--http", "7070"}, `ganglion: --http "7070": want HOST:PORT, as in 127.0.0.1:7070: address 7070: missing port in address` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exe(t, dir, "", append([]string{"mcp", dir}, tt.args...)...)
			if r.code != exitUsage || r.stderr != tt.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and\n%s", r.code, r.stderr, exitUsage, tt.want)
			}
		})
	}
}

// TestMCPOverHTTPS: with --tls-cert and --tls-key, ganglion mcp --http
// serves beyond loopback, over HTTPS, still behind its token.
func TestMCPOverHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	cert, key, pool := selfSigned(t)
	lines, stop := startMCPHTTP(t, dir, "--http", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key)
	defer stop()
	// Every interface: 0.0.0.0, or [::] where the socket takes both.
	port := regexp.MustCompile(`^ganglion: serving .*'s agents over MCP at https://(?:0\.0\.0\.0|\[::\]):(\d+)/mcp$`).FindStringSubmatch(lines[0])
	token := regexp.MustCompile(`[0-9a-f]{64}`).FindString(lines[2])
	if port == nil || token == "" {
		t.Fatalf("mcp --http over TLS printed:\n%s", strings.Join(lines, "\n"))
	}
	base := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	endpoint := "https://127.0.0.1:" + port[1] + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: base}, MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	auth := roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return base.RoundTrip(r)
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: auth}}, nil)
	must(t, err)
	defer cs.Close()
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over HTTPS: %q (error %v)", text, res.IsError)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their files and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ganglion test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kb, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	return certFile, keyFile, pool
}

// TestMCPPauseAnsweredWithCLI: a pause reached through ganglion mcp (a
// real process, over stdio) is answered with the command its paused
// result names, which reaches the running mcp; calling the tool again
// then returns the resumed agent's answer.
func TestMCPPauseAnsweredWithCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := pendingProject(t)
	cmd := exec.Command(cliBinary(t), "mcp", dir)
	cmd.Env = childEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	text, res := callText(t, cs, "asker", map[string]any{"message": "price it"})
	id := regexp.MustCompile(`p-[0-9a-f]{12}`).FindString(text)
	want := "The agent paused: it waits for a human.\n" +
		"- " + id + ": a question of asker/mcp: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n" +
		"  answer it: ganglion answer " + dir + " " + id + " ANSWER, or: ganglion skip " + dir + " " + id + "\n" +
		"Once it is answered, call this tool again with the same instance (\"mcp\"): that call returns the agent's answer, and does not send its message.\n"
	if res.IsError || id == "" || text != want {
		t.Fatalf("paused result:\n%s\nwant:\n%s\nstderr: %s", text, want, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data.server")); err != nil {
		t.Errorf("ganglion mcp wrote no data.server: %v", err)
	}
	r := exe(t, dir, "", "pending", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, id) {
		t.Errorf("pending through ganglion mcp: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = exe(t, dir, "", "answer", dir, id, "Freemium")
	check(t, "answer through ganglion mcp", r, exitOK, ptr(askResumed), ptr("$ID of asker/mcp answered: Freemium\n"), id)
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "asker", Arguments: map[string]any{"message": "and now?"}})
	must(t, err)
	var got []string
	for _, c := range res.Content {
		got = append(got, c.(*mcp.TextContent).Text)
	}
	wantGot := []string{strings.TrimSuffix(askResumed, "\n"),
		"(That is the agent's answer to the message that paused it, given once its pause was answered. This call's message was not sent: send it again if it asks something new.)"}
	if res.IsError || !slices.Equal(got, wantGot) {
		t.Errorf("the call after the answer: %q (error %v)\nwant %q", got, res.IsError, wantGot)
	}
	if text, res := callText(t, cs, "asker", map[string]any{"message": "next"}); res.IsError || text != "fallback: next" {
		t.Errorf("the call after that: %q (error %v)", text, res.IsError)
	}
	must(t, cs.Close())
	if _, err := os.Stat(filepath.Join(dir, "data.server")); !os.IsNotExist(err) {
		t.Errorf("data.server after ganglion mcp exited: %v", err)
	}
}

// bearerTransport adds the server's token to each request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCP: ganglion serve also serves the agents as MCP tools at
// /mcp, behind its token.
func TestServeMCP(t *testing.T) {
	dir := project(t, testConfig)
	addr, token, stop := startServe(t, dir)
	defer stop()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport(token)}}, nil)
	must(t, err)
	defer cs.Close()
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over serve's /mcp: %q (error %v)", text, res.IsError)
	}
}
