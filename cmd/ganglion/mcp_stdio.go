package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over stdio, MCP is newline-delimited JSON-RPC 2.0, one message a line.
// The SDK's transport ends the session on the first line it cannot decode,
// and with it the process. stdioGate stands in front of it: a line that is
// not a JSON-RPC 2.0 message gets the error response JSON-RPC prescribes,
// and the next line is read as if nothing happened.

// stdioGate is an [mcp.Transport] over in and out that checks each line
// (checkLine) before the SDK's transport reads it.
type stdioGate struct {
	in     io.ReadCloser
	out    io.Writer
	logger *slog.Logger
	// max is the most bytes a line may hold; 0 is mcp.DefaultMaxLineLength.
	max int
}

// Connect starts the goroutine that reads in, which ends when in ends or
// the connection closes (closing it closes in).
func (g *stdioGate) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	out := &lockedWriter{w: g.out}
	max := g.max
	if max <= 0 {
		max = mcp.DefaultMaxLineLength
	}
	go g.pump(pw, out, max)
	// Each line that reaches the SDK is one checked message: its own
	// frame limit would only count the bytes of the next line too.
	return (&mcp.IOTransport{Reader: closeBoth{pr, g.in}, Writer: nopWriteCloser{out}, MaxLineLength: -1}).Connect(ctx)
}

// pump reads in a line at a time: it passes messages on to to, answers
// the lines that are not messages on out, and closes to when in ends.
func (g *stdioGate) pump(to *io.PipeWriter, out io.Writer, max int) {
	r := bufio.NewReaderSize(g.in, 64<<10)
	for {
		line, long, err := readLine(r, max)
		var v lineVerdict
		switch {
		case long:
			v = lineVerdict{reply: rpcError(nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("invalid request: the line is longer than %d bytes, the most a message may take", max))}
		case len(line) > 0 || err == nil:
			v = checkLine(line)
		}
		var werr error
		switch {
		case v.pass:
			_, werr = to.Write(append(line, '\n'))
		case v.reply != nil:
			g.logger.Debug("mcp: answered a line that is not a JSON-RPC message", "reply", string(v.reply))
			_, werr = out.Write(append(v.reply, '\n'))
		case v.drop != "":
			g.logger.Warn("mcp: dropped a malformed response of the client", "why", v.drop)
		}
		if werr != nil {
			to.CloseWithError(werr)
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				to.Close()
			} else {
				to.CloseWithError(err)
			}
			return
		}
	}
}

// readLine returns the next line of r without its line ending. A line
// longer than max is read to its end but not kept: long is then set.
func readLine(r *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max+2 { // room for "\r\n"
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if !long && len(line) > max {
			long, line = true, nil
		}
		return line, long, err
	}
}

// lineVerdict is what becomes of one line a client sent: pass it to the
// SDK, answer it (reply), drop it (drop says why), or nothing (a blank
// line).
type lineVerdict struct {
	pass  bool
	reply []byte
	drop  string
}

// checkLine decides what becomes of line. It passes a JSON-RPC 2.0
// message the SDK decodes: a request (with a string or integer ID, or
// none for a notification) or a response. Anything else that is not blank
// gets an error response: -32700 (parse error) when it is not JSON,
// -32600 (invalid request) when it is JSON but no such message, with the
// request's ID when it has a valid one, else null. A malformed response
// is dropped, as JSON-RPC answers no response. A batch (an array) is
// refused as a whole: MCP took batches out of the protocol in 2025-06-18.
func checkLine(line []byte) lineVerdict {
	if len(bytes.TrimSpace(line)) == 0 {
		return lineVerdict{}
	}
	var raw json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return lineVerdict{reply: rpcError(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())}
	}
	invalid := func(id json.RawMessage, format string, args ...any) lineVerdict {
		return lineVerdict{reply: rpcError(id, jsonrpc.CodeInvalidRequest, "invalid request: "+fmt.Sprintf(format, args...))}
	}
	switch kind := jsonKind(raw); kind {
	case "an object":
	case "an array":
		return invalid(nil, "a batch (a JSON array) is not supported: send one message a line")
	default:
		return invalid(nil, "a message is a JSON object, not %s", kind)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return invalid(nil, "%v", err)
	}
	version, hasVersion := m["jsonrpc"]
	idRaw, hasID := m["id"]
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	id, idErr := messageID(idRaw)
	versionOK := string(bytes.TrimSpace(version)) == `"2.0"`
	if !hasMethod && (hasResult || hasError) {
		switch {
		case !versionOK:
			return lineVerdict{drop: `a response whose "jsonrpc" is not "2.0"`}
		case !hasID || idErr != nil || id == nil:
			return lineVerdict{drop: `a response without a string or integer "id"`}
		}
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			return lineVerdict{drop: "a response the SDK cannot read: " + err.Error()}
		}
		return lineVerdict{pass: true}
	}
	var replyID json.RawMessage
	if idErr == nil {
		replyID = id
	}
	switch {
	case !versionOK && hasVersion:
		return invalid(replyID, `"jsonrpc" must be "2.0", not %s`, shortJSON(version))
	case !versionOK:
		return invalid(replyID, `"jsonrpc" must be "2.0"`)
	case hasID && idErr != nil:
		return invalid(nil, `"id" must be a string or an integer, not %s`, idErr.Error())
	case hasID && id == nil:
		return invalid(nil, `"id" must not be null: leave it out of a notification`)
	case !hasMethod:
		return invalid(replyID, `a message has a "method" (a request) or a "result" or "error" (a response)`)
	case jsonKind(method) != "a string":
		return invalid(replyID, `"method" must be a string`)
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return invalid(replyID, "%v", err)
	}
	return lineVerdict{pass: true}
}

// messageID reads a message's "id": a string, or an integer that a
// float64 holds exactly, as the SDK reads it. It returns the ID as the
// reply names it (nil for null), or an error that says what it is
// instead.
func messageID(raw json.RawMessage) (json.RawMessage, error) {
	if raw == nil {
		return nil, nil
	}
	switch kind := jsonKind(raw); kind {
	case "null":
		return nil, nil
	case "a string":
		return raw, nil
	case "a number":
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, errors.New(shortJSON(raw))
		}
		return json.RawMessage(strconv.FormatInt(int64(f), 10)), nil
	default:
		return nil, errors.New(kind)
	}
}

// jsonKind names the kind of the JSON value raw, as an error message
// says it.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// shortJSON is a JSON value for an error message: compact, and cut to 40
// bytes.
func shortJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	if b.Len() > 40 {
		return string(b.Bytes()[:40]) + "…"
	}
	return b.String()
}

// rpcError is a JSON-RPC 2.0 error response to the request id (nil:
// null), on one line.
func rpcError(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// lockedWriter makes the SDK's messages and the gate's answers whole
// lines that never interleave: each is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// closeBoth reads from the pipe the gate fills, and closes the gate's
// input with it, as the SDK's own stdio transport closes standard input.
type closeBoth struct {
	*io.PipeReader
	in io.Closer
}

func (c closeBoth) Close() error { return errors.Join(c.PipeReader.Close(), c.in.Close()) }

var _ mcp.Transport = (*stdioGate)(nil)
