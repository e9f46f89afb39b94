package natstest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy in front of one NATS server, which a test uses to
// lose a server's answers at a chosen moment: [Proxy.Freeze] makes a
// request reach the server and its reply never come back, as when the
// server that took a commit dies before it answers. It is safe for
// concurrent use.
type Proxy struct {
	tb     testing.TB
	ln     net.Listener
	target string // host:port

	frozen atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // both ends of every proxied connection
	cut    bool
	wg     sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards each connection
// to the server at target (a nats:// client URL, or host:port), until
// the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{tb: tb, ln: ln, target: strings.TrimPrefix(target, "nats://"), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	tb.Cleanup(func() {
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// URL returns the proxy's client URL, for nats.Connect.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Freeze keeps forwarding what clients send to the server, and from now
// on drops what the server sends back: a request is served and its reply
// lost. A connection stays frozen until [Proxy.Cut] closes it.
func (p *Proxy) Freeze() { p.frozen.Store(true) }

// Frozen reports whether Freeze was called.
func (p *Proxy) Frozen() bool { return p.frozen.Load() }

// Cut closes every proxied connection and the listener: the clients see
// their server gone, and reconnect to another one they know of.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed by Cut
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(server, client, false) })
		p.wg.Go(func() { p.pipe(client, server, true) })
	}
}

// pipe copies from src to dst until either closes; fromServer's bytes
// are read and dropped once the proxy is frozen.
func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !(fromServer && p.frozen.Load()) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or a side closed by Cut
		}
	}
}
