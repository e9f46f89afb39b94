package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/runtime"
)

// ChannelGUI is the channel of browser clients: a message sent with the
// metadata {"channel": "gui", "replyTo": CLIENT} has the answer of the
// task it starts (however long its delegation chain takes) delivered to
// CLIENT's answer stream (GET /v1/gui/{client}/answers).
const ChannelGUI = "gui"

// GUI is the runtime.Channel of browser clients ([ChannelGUI]). Register it
// with the runtime (runtime.WithChannel(ChannelGUI, gui)) and with the
// server ([WithGUI]).
//
// An answer goes to its client's open answer stream. While the client has
// none (a tab closed, a network gone), the answer stays stored, answered,
// and is delivered when the client opens its stream again, also after a
// restart of the server (runtime.ErrDeliverLater). A client has one
// stream at a time: a new one replaces the old.
//
// A GUI is safe for concurrent use.
type GUI struct {
	mu      sync.Mutex
	clients map[string]*guiClient
}

type guiClient struct {
	answers chan runtime.Report
}

// NewGUI returns a GUI channel with no client connected.
func NewGUI() *GUI { return &GUI{clients: map[string]*guiClient{}} }

// Deliver hands r to the stream of client r.ReplyTo, or asks the runtime
// to keep it for later when the client has no stream open.
func (g *GUI) Deliver(_ context.Context, r runtime.Report) error {
	g.mu.Lock()
	c := g.clients[r.ReplyTo]
	g.mu.Unlock()
	if c == nil {
		return fmt.Errorf("gui client %q has no answer stream open: %w", r.ReplyTo, runtime.ErrDeliverLater)
	}
	select {
	case c.answers <- r:
		return nil
	default:
		return fmt.Errorf("gui client %q has 64 answers unread: %w", r.ReplyTo, runtime.ErrDeliverLater)
	}
}

// connect opens client's stream, replacing one it had.
func (g *GUI) connect(client string) *guiClient {
	c := &guiClient{answers: make(chan runtime.Report, 64)}
	g.mu.Lock()
	g.clients[client] = c
	g.mu.Unlock()
	return c
}

// disconnect closes client's stream c, unless a newer one replaced it.
func (g *GUI) disconnect(client string, c *guiClient) {
	g.mu.Lock()
	if g.clients[client] == c {
		delete(g.clients, client)
	}
	g.mu.Unlock()
}

// WithGUI serves the answer streams of gui's clients.
func WithGUI(gui *GUI) Option { return func(s *Server) { s.gui = gui } }

// guiAnswers serves GET /v1/gui/{client}/answers: the client's answers,
// those kept while it was away first, as "answer" events whose data is a
// runtime.Report.
func (s *Server) guiAnswers(w http.ResponseWriter, r *http.Request) {
	client := r.PathValue("client")
	c := s.gui.connect(client)
	defer s.gui.disconnect(client, c)
	sse := startSSE(w)
	// What waited for this client (and any other away) is handed over.
	go func() {
		if err := s.rt.DeliverAnswers(context.WithoutCancel(r.Context()), ChannelGUI); err != nil {
			s.logger.Error("delivering the answers kept for gui clients failed", "err", err)
		}
	}()
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		select {
		case rep := <-c.answers:
			b, _ := json.Marshal(rep)
			sse.event("", "answer", b)
			sse.flush()
		case <-beat.C:
			sse.comment("keep-alive")
		case <-s.closed:
			return
		case <-r.Context().Done():
			return
		}
	}
}
