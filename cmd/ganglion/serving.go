package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/server"
)

// serve and mcp serve a runtime over HTTP the same way, by the same rules:
// on one listener, the API and web console of runtime/server and the MCP
// endpoint /mcp, every call behind the server's token (DATA.token, made
// on the first start, mode 0600); an address beyond loopback only with
// TLS; and while it runs, DATA.server says where it listens, so that the
// other commands on the config reach the agents through it.

// httpFlags say where a command serves HTTP: flag names the address's
// flag in errors (--addr, --http).
type httpFlags struct {
	flag, addr, cert, key string
}

// check refuses half a TLS setup, and an address beyond loopback without
// TLS.
func (h httpFlags) check() error {
	if (h.cert == "") != (h.key == "") {
		return usageError("--tls-cert and --tls-key go together: give both, or neither")
	}
	return checkAddr(h.flag, h.addr, h.cert != "")
}

// checkAddr refuses to listen beyond loopback without TLS; flag names the
// address's flag.
func checkAddr(flag, addr string, tls bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("%s %q: want HOST:PORT, as in %s: %v", flag, addr, defaultAddr, err)
	}
	if tls {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageError("%s %s is reachable from other machines, and without TLS the token would cross the network in clear: "+
		"give --tls-cert and --tls-key, or listen on loopback (%s)", flag, addr, defaultAddr)
}

// httpAgents is a runtime served over HTTP: listenHTTP makes it, serve
// starts it, stop ends it.
type httpAgents struct {
	// url is where it listens: scheme://host:port.
	url       string
	token     string
	tokenFile string
	// made says this start made the token.
	made       bool
	srv        *server.Server
	hs         *http.Server
	ln         net.Listener
	cert, key  string
	serverFile string
	errc       chan error
}

// listenHTTP listens where h says, for rt's API and console, and for
// mcpServer at /mcp, behind the token kept beside data (the data
// directory); dir is the config's directory, which the answer to a call
// without the token names the token file from. opts are more options of
// the API's server. It writes DATA.server; serve starts serving.
func listenHTTP(rt *runtime.Runtime, h httpFlags, dir, data string, logger *slog.Logger, mcpServer *mcp.Server, opts ...server.Option) (*httpAgents, error) {
	a := &httpAgents{tokenFile: data + ".token", serverFile: data + ".server", cert: h.cert, key: h.key, errc: make(chan error, 1)}
	var err error
	if a.token, a.made, err = serverToken(a.tokenFile); err != nil {
		return nil, failed(err)
	}
	sopts := append([]server.Option{server.WithToken(a.token), server.WithTokenHint(tokenHint(dir, a.tokenFile)), server.WithLogger(logger)}, opts...)
	if a.srv, err = server.New(rt, sopts...); err != nil {
		return nil, failed(err)
	}
	if a.ln, err = net.Listen("tcp", h.addr); err != nil {
		a.srv.Close()
		return nil, failed(fmt.Errorf("listen on %s: %w", h.addr, err))
	}
	scheme := "http"
	if h.cert != "" {
		scheme = "https"
	}
	a.url = scheme + "://" + a.ln.Addr().String()
	sf, _ := json.Marshal(serverFile{URL: a.url, PID: os.Getpid()})
	if err := os.WriteFile(a.serverFile, append(sf, '\n'), 0o600); err != nil {
		a.ln.Close()
		a.srv.Close()
		return nil, failed(fmt.Errorf("say where the server listens: %w", err))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.srv.Guard(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)))
	mux.Handle("/", a.srv)
	a.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return a, nil
}

// serve serves in the background; done receives why it stopped, unless
// stop stopped it.
func (a *httpAgents) serve() {
	go func() {
		var err error
		if a.cert != "" {
			err = a.hs.ServeTLS(a.ln, a.cert, a.key)
		} else {
			err = a.hs.Serve(a.ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			a.errc <- err
		}
	}()
}

// done receives the error that stopped the server on its own.
func (a *httpAgents) done() <-chan error { return a.errc }

// stop ends the event streams, lets the calls in flight finish until ctx
// ends, and removes DATA.server.
func (a *httpAgents) stop(ctx context.Context) error {
	defer os.Remove(a.serverFile)
	a.srv.Close() // ends the event streams, which would hold Shutdown up
	if err := a.hs.Shutdown(ctx); err != nil {
		a.hs.Close()
		return err
	}
	return nil
}

// stopAll stops serving a and the runtime rt within timeout: a takes no
// new call at once; rt lets its turns finish until timeout ends, then cuts
// those left (see [runtime.Runtime.Shutdown]), so that a routed resume or
// a turn another process sent here gets the same time as a call to this
// server; then the calls in flight get answerGrace to write their answers
// before their connections are closed.
func stopAll(a *httpAgents, rt *runtime.Runtime, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The server's own deadline comes after the runtime's: a call cut by
	// the runtime's stop answers what happened, not a closed connection.
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	stopped := make(chan error, 1)
	go func() { stopped <- a.stop(hctx) }()
	err := rt.Shutdown(ctx)
	t := time.AfterFunc(answerGrace, hcancel)
	defer t.Stop()
	if herr := <-stopped; herr != nil {
		err = errors.Join(err, fmt.Errorf("the HTTP calls in flight did not end: %w", herr))
	}
	return err
}

// answerGrace is how long stopAll lets the calls in flight answer once the
// runtime has stopped.
const answerGrace = time.Second

// tokenLine says where the token is, and shows it when this start made it.
func (a *httpAgents) tokenLine() string {
	if a.made {
		return fmt.Sprintf("token (shown once; kept in %s): %s", a.tokenFile, a.token)
	}
	return "token: in " + a.tokenFile
}

// tokenHint tells a client that called without the token where it is
// kept: relative to the config's directory dir when it is inside it.
func tokenHint(dir, tokenFile string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		if rel, err := filepath.Rel(abs, tokenFile); err == nil && filepath.IsLocal(rel) {
			return "it is kept in " + rel + ", beside ganglion.yaml"
		}
	}
	return "it is kept in " + tokenFile
}
