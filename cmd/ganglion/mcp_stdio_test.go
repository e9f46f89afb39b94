package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// The lines of the malformed-input cases, each with the error response
// JSON-RPC 2.0 prescribes; "" is a line that gets no answer.
var malformedLines = []struct {
	name, line, want string
}{
	{"not JSON", `not json`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u')"}}`},
	{"an empty batch", `[]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a batch (a JSON array) is not supported: send one message a line"}}`},
	{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a batch (a JSON array) is not supported: send one message a line"}}`},
	{"an empty object", `{}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
	{"an object as id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"id\" must be a string or an integer, not an object"}}`},
	{"version 1.0", `{"jsonrpc":"1.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\", not \"1.0\""}}`},
	{"a string", `"hello"`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a message is a JSON object, not a string"}}`},
	{"trailing data", `{"jsonrpc":"2.0","id":2,"method":"tools/list"} {}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character '{' after top-level value"}}`},
	{"a null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"id\" must not be null: leave it out of a notification"}}`},
	{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: \"id\" must be a string or an integer, not 1.5"}}`},
	{"a number as method", `{"jsonrpc":"2.0","id":"m","method":5}`,
		`{"jsonrpc":"2.0","id":"m","error":{"code":-32600,"message":"invalid request: \"method\" must be a string"}}`},
	{"neither request nor response", `{"jsonrpc":"2.0","id":3}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: a message has a \"method\" (a request) or a \"result\" or \"error\" (a response)"}}`},
	{"an empty line", ``, ``},
	{"blanks", " \t\r", ``},
	{"a malformed response", `{"jsonrpc":"2.0","result":{}}`, ``},
}

// hugeLine is one line longer than a message may be.
func hugeLine() string {
	return `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 16<<20) + `"}}`
}

const hugeReply = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the line is longer than 16777216 bytes, the most a message may take"}}`

// TestMCPStdioAnswersMalformedMessages: ganglion mcp, a real process,
// answers each line that is not a JSON-RPC 2.0 message with the JSON-RPC
// error, and goes on serving: an MCP session after them works, and the
// process exits 0 when its input ends.
func TestMCPStdioAnswersMalformedMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	cmd := exec.Command(cliBinary(t), "mcp", dir)
	cmd.Env = childEnv()
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	rpc := newLineClient(t, stdin, stdout)
	for _, c := range malformedLines {
		if c.want != "" {
			if got := rpc.call(c.line); got != c.want {
				t.Errorf("%s: %s\nwant %s\nstderr: %s", c.name, got, c.want, stderr.String())
			}
		} else {
			rpc.send(c.line)
		}
	}
	if got := rpc.call(hugeLine()); got != hugeReply {
		t.Errorf("a huge line: %s\nwant %s", got, hugeReply)
	}
	rpc.session(t)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ganglion mcp after its input ended: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ganglion mcp did not exit when its input ended; stderr: %s", stderr.String())
	}
}

// lineClient speaks newline-delimited JSON-RPC by hand, as an MCP client
// on a process's standard input and output would.
type lineClient struct {
	t     *testing.T
	w     io.Writer
	lines chan string
}

func newLineClient(t *testing.T, w io.Writer, r io.Reader) *lineClient {
	c := &lineClient{t: t, w: w, lines: make(chan string, 16)}
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				close(c.lines)
				return
			}
			c.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	return c
}

func (c *lineClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("write %.80q: %v", line, err)
	}
}

// call sends line and returns the next line the server writes.
func (c *lineClient) call(line string) string {
	c.t.Helper()
	c.send(line)
	select {
	case got, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the server closed its output after %.80q", line)
		}
		return got
	case <-time.After(60 * time.Second):
		c.t.Fatalf("no answer to %.80q", line)
	}
	return ""
}

// session initializes an MCP session and asks the agent helper to read
// its file, as a client that came after the malformed lines would.
func (c *lineClient) session(t *testing.T) {
	t.Helper()
	init := c.call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hand","version":"1"}}}`)
	if !strings.HasPrefix(init, `{"jsonrpc":"2.0","id":1,"result":{`) || !strings.Contains(init, `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %s", init)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	got := c.call(`{"jsonrpc":"2.0","id":"call-2","method":"tools/call","params":{"name":"helper","arguments":{"message":"read the file"}}}`)
	var res struct {
		ID     string `json:"id"`
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
	}
	if err := json.Unmarshal([]byte(got), &res); err != nil || res.ID != "call-2" || res.Result.IsError ||
		len(res.Result.Content) != 1 || res.Result.Content[0].Text != "It says: hello world\n" {
		t.Fatalf("tools/call: %s (%v)", got, err)
	}
}

// TestMCPStdioGate: over the gate, the MCP server answers each malformed
// line with its error response, ignores blank lines and drops malformed
// responses, and serves the session that follows; its input's end ends it.
func TestMCPStdioGate(t *testing.T) {
	dir := project(t, testConfig)
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	must(t, err)
	rt, err := runtime.New(t.Context(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	must(t, err)
	defer rt.Close()
	m := newMCPAgents(rt, place(dir, ""), slog.New(slog.DiscardHandler))
	defer m.close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- m.server().Run(t.Context(), &stdioGate{in: inR, out: outW, logger: slog.New(slog.DiscardHandler)})
		outW.Close()
	}()
	rpc := newLineClient(t, inW, outR)
	for _, c := range malformedLines {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				rpc.send(c.line) // the next case's answer is the next line
				return
			}
			if got := rpc.call(c.line); got != c.want {
				t.Errorf("%s\nwant %s", got, c.want)
			}
		})
	}
	if got := rpc.call(hugeLine()); got != hugeReply {
		t.Errorf("a huge line: %s\nwant %s", got, hugeReply)
	}
	rpc.session(t)
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the server, once its input ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end with its input")
	}
}

// TestReadLine: lines end at "\n" or "\r\n"; a line longer than the most
// is read to its end and reported, and the next line is read whole.
func TestReadLine(t *testing.T) {
	in := "short\r\n" + strings.Repeat("y", 40) + "\nnext\nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	type line struct {
		text string
		long bool
		err  error
	}
	var got []line
	for {
		l, long, err := readLine(r, 20)
		got = append(got, line{string(l), long, err})
		if err != nil {
			break
		}
	}
	want := []line{{"short", false, nil}, {"", true, nil}, {"next", false, nil}, {"last", false, io.EOF}}
	if !slices.Equal(got, want) {
		t.Errorf("lines %+v\nwant %+v", got, want)
	}
}

// FuzzCheckLine: whatever a client sends on a line, the gate passes only
// what the SDK decodes as one message, and answers everything else (but
// blanks and responses) with a JSON-RPC 2.0 error response that names
// the request's ID only when it is a valid one.
func FuzzCheckLine(f *testing.F) {
	for _, c := range malformedLines {
		f.Add(c.line)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") {
			return // the gate splits lines before it checks them
		}
		v := checkLine([]byte(line))
		switch {
		case v.pass:
			if v.reply != nil || v.drop != "" {
				t.Fatalf("%q: passed and answered or dropped: %+v", line, v)
			}
			msg, err := jsonrpc.DecodeMessage([]byte(line))
			if err != nil {
				t.Fatalf("%q passed, but the SDK cannot decode it: %v", line, err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q passed, but it is no JSON object: %v", line, err)
			}
			if req, ok := msg.(*jsonrpc.Request); ok && m["id"] != nil && !req.ID.IsValid() {
				t.Fatalf("%q passed with an id the SDK reads as none", line)
			}
		case v.reply != nil:
			if v.drop != "" {
				t.Fatalf("%q: answered and dropped", line)
			}
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(v.reply, &r); err != nil || r.JSONRPC != "2.0" || r.Error == nil || r.ID == nil {
				t.Fatalf("%q: the answer %s is no JSON-RPC error response (%v)", line, v.reply, err)
			}
			if r.Error.Code != jsonrpc.CodeParseError && r.Error.Code != jsonrpc.CodeInvalidRequest || r.Error.Message == "" {
				t.Fatalf("%q: the answer %s has code %d", line, v.reply, r.Error.Code)
			}
			if strings.ContainsRune(string(v.reply), '\n') {
				t.Fatalf("%q: the answer %q is not one line", line, v.reply)
			}
			if string(r.ID) != "null" {
				if _, err := jsonrpc.MakeID(func() any { var x any; json.Unmarshal(r.ID, &x); return x }()); err != nil {
					t.Fatalf("%q: the answer names the id %s, which is not a valid one", line, r.ID)
				}
			}
		case v.drop != "":
		default:
			if strings.TrimSpace(line) != "" {
				t.Fatalf("%q: neither passed, answered nor dropped", line)
			}
		}
	})
}
