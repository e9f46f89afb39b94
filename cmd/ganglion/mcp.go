package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

func newMCPCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var (
		f runFlags
		h = httpFlags{flag: "--http"}
	)
	cmd := &cobra.Command{
		Use:   "mcp [DIR]",
		Short: "Serve DIR's agents as MCP tools, over stdio or streamable HTTP",
		Long: `MCP serves the agents of DIR/ganglion.yaml to MCP clients (an IDE, a desktop
assistant) as tools, one per agent, with their extensions, rules and delegation
behind them. A tool takes a message (and an optional instance key, default
"mcp") and returns the agent's answer, after every delegation has reported.

It speaks MCP on its standard input and output, one JSON-RPC message a
line; a line that is not one is answered with the JSON-RPC error (parse
error, invalid request) and the next is read. With --http it serves
streamable HTTP at ADDR instead (path /mcp), by serve's rules: every call
needs the server's token (.ganglion/data.token, made on the first start
and printed once), and an address beyond loopback needs --tls-cert and
--tls-key. Logs go to stderr.

Either way it also serves the HTTP API and the web console of ganglion
serve, behind the same token (over stdio, on a port of 127.0.0.1 of its
own), and says where in .ganglion/data.server: while it runs, ganglion
pending, answer, skip, provide, reject, tasks, history and run on the same
config reach the agents through it, as they reach a running serve.

When a turn pauses for a human and the client supports elicitation (the
protocol's way for a server to ask the client's user), what it waits for
is asked through the client, one item at a time (at most 8 a call): a
question (its options and default as the form's), a tool approval
(approve, or reject with a reason), a call for guidance, a dependency
that is not secret (a file, a permission, a package). The answers resume
the agent within the same call, whose result is then the agent's answer. Declining an
optional question skips it (it takes its default), declining an optional
dependency rejects it (the agent goes on without it); any other decline,
or a cancel, leaves the item open. Secrets (API keys, environment
variables, service URLs) are never asked through the client: the result
lists what is left open, with the command that answers each, which works
against this running server. Once answered, call the tool again with the
same instance: that call returns the agent's answer, and does not send its
own message.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			over := h
			if h.addr == "" {
				if h.cert != "" || h.key != "" {
					return usageError("--tls-cert and --tls-key are for --http: over stdio, the HTTP API listens on loopback only")
				}
				over.addr = "127.0.0.1:0"
			} else if err := h.check(); err != nil {
				return err
			}
			dir := projectDir(args)
			ctx := cmd.Context()
			rt, _, err := openRuntime(ctx, f, dir, stderr)
			if err != nil {
				return err
			}
			defer rt.Close()
			data, err := dataDir(f, dir)
			if err != nil {
				return failed(err)
			}
			logger, _ := newLogger(stderr, f.logLevel)
			// The commands in a paused result are run by a person in a
			// terminal anywhere: they name the directories in full.
			abs, err := filepath.Abs(dir)
			if err != nil {
				return failed(err)
			}
			agents := newMCPAgents(rt, place(abs, f.data), logger)
			defer agents.close()
			web, err := listenHTTP(rt, over, dir, data, logger, agents.server())
			if err != nil {
				return err
			}
			agents.reachable(web.url, web.tokenFile)
			web.serve()
			defer stopAll(web, rt, mcpStopTimeout)
			if h.addr == "" {
				in, ok := stdin.(io.ReadCloser)
				if !ok {
					in = io.NopCloser(stdin)
				}
				err := agents.server().Run(ctx, &stdioGate{in: in, out: stdout, logger: logger})
				if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
					return failed(fmt.Errorf("mcp: %w", err))
				}
				return nil
			}
			fmt.Fprintf(stderr, "ganglion: serving %s's agents over MCP at %s/mcp\n", dir, web.url)
			fmt.Fprintf(stderr, "ganglion: the HTTP API at %s/v1/, the web console at %s/\n", web.url, web.url)
			fmt.Fprintf(stderr, "ganglion: %s\n", web.tokenLine())
			select {
			case err := <-web.done():
				return failed(fmt.Errorf("mcp: %w", err))
			case <-ctx.Done():
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.data, "data", "", "data directory (default: the config's data:, else .ganglion/data next to ganglion.yaml)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	cmd.Flags().StringVar(&h.addr, "http", "", "serve streamable HTTP at this address (host:port) instead of stdio")
	cmd.Flags().StringVar(&h.cert, "tls-cert", "", "TLS certificate file (PEM), to serve --http over HTTPS")
	cmd.Flags().StringVar(&h.key, "tls-key", "", "TLS key file (PEM) of --tls-cert")
	return cmd
}

// mcpStopTimeout is how long the calls and turns in flight may take to
// finish when ganglion mcp stops.
const mcpStopTimeout = 10 * time.Second

// mcpArgs are a tool call's arguments: the message, and the instance.
type mcpArgs struct {
	Message  string `json:"message" jsonschema:"what to ask the agent: everything it needs, in plain words"`
	Instance string `json:"instance,omitempty" jsonschema:"the conversation to continue (default mcp): the same key resumes the same history"`
}

// mcpAgents serves a runtime's agents to MCP clients as tools, one per
// agent. A call sends its message to the agent's instance and returns the
// answer once every delegation reported; a call whose turn pauses asks
// the client for what it may (mcp_pause.go) and returns what is left
// open. Per instance it follows the turns, so that an answer that comes
// while no call waits (the pause was answered with the CLI) is what the
// next call returns.
//
// An mcpAgents is safe for concurrent use: one serves every session.
type mcpAgents struct {
	rt     *runtime.Runtime
	logger *slog.Logger
	srv    *mcp.Server
	// where is how the commands of a paused result name the config and
	// the data (see place).
	where string
	unsub func()

	mu sync.Mutex
	// api and tokenFile say where the HTTP API listens and where its
	// token is, for a secret's paused result; "" without an API.
	api, tokenFile string
	convs          map[convKey]*conversation
	// changed is closed, and replaced, when a turn ends or an item is
	// created or resolved: a call that waits for something to happen
	// looks again.
	changed chan struct{}
}

// convKey names an instance.
type convKey struct{ agent, key string }

// newMCPAgents returns the MCP tools of rt's agents; where is how the
// commands it suggests name the config and the data. Close it when done.
func newMCPAgents(rt *runtime.Runtime, where string, logger *slog.Logger) *mcpAgents {
	m := &mcpAgents{rt: rt, logger: logger, where: where, convs: map[convKey]*conversation{}, changed: make(chan struct{})}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "ganglion", Version: buildVersion()}, &mcp.ServerOptions{Logger: logger})
	agents, _ := rt.Describe()
	for _, a := range agents {
		if a.Unavailable != "" {
			continue
		}
		desc := a.Description
		if desc == "" {
			desc = "The Ganglion agent " + a.Name + "."
		}
		desc += " Send it a message; it answers once its work, delegations included, is done."
		mcp.AddTool(m.srv, &mcp.Tool{Name: a.Name, Description: desc}, func(ctx context.Context, req *mcp.CallToolRequest, args mcpArgs) (*mcp.CallToolResult, any, error) {
			return m.call(ctx, req, a.Name, args), nil, nil
		})
	}
	unTurns := rt.Events().Subscribe(events.TurnFinished, m.event)
	unItems := rt.Events().Subscribe("pending.*", m.event)
	m.unsub = func() { unTurns(); unItems() }
	return m
}

// server is the MCP server of the tools.
func (m *mcpAgents) server() *mcp.Server { return m.srv }

// reachable says where the HTTP API of the runtime listens, and where its
// token is kept.
func (m *mcpAgents) reachable(api, tokenFile string) {
	m.mu.Lock()
	m.api, m.tokenFile = api, tokenFile
	m.mu.Unlock()
}

// close stops following the runtime's events.
func (m *mcpAgents) close() { m.unsub() }

// event follows the turns and items of the instances calls talk to.
func (m *mcpAgents) event(ev events.Event) {
	m.mu.Lock()
	c := m.convs[convKey{ev.Agent, ev.Instance}]
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	if c != nil && ev.Topic == events.TurnFinished {
		c.turnFinished(ev)
	}
}

// conversation returns what the calls of agent's instance key wait for.
func (m *mcpAgents) conversation(agent, key string) *conversation {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := convKey{agent, key}
	c, ok := m.convs[k]
	if !ok {
		c = &conversation{slot: make(chan struct{}, 1)}
		m.convs[k] = c
	}
	return c
}

// changes returns a channel closed at the next change (see changed).
func (m *mcpAgents) changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// conversation is what the MCP calls of one instance wait for: the answer
// of the message a call sent, which may come after that call returned
// (paused) and before the next.
type conversation struct {
	slot chan struct{} // holds the call in progress: one at a time

	mu sync.Mutex
	// watching is set from the moment a call sends its message until a
	// call returns the answer to it.
	watching bool
	// unread is set when a call returned before the answer came: the
	// next call returns it rather than send its own message.
	unread bool
	// answer is the end of the first turn of the instance that ended its
	// work (not paused, not waiting for delegations) since the message.
	answer *events.Event
}

// turnFinished keeps ev as the answer if it ends the instance's work and
// a call waits for one.
func (c *conversation) turnFinished(ev events.Event) {
	d, ok := ev.Data.(events.TurnFinishedData)
	if !ok || d.FinishReason == pipeline.FinishPaused || d.FinishReason == pipeline.FinishDelegated {
		return
	}
	c.mu.Lock()
	if c.watching && c.answer == nil {
		c.answer = &ev
	}
	c.mu.Unlock()
}

// begin starts waiting for the answer of a message about to be sent.
func (c *conversation) begin() {
	c.mu.Lock()
	c.watching, c.unread, c.answer = true, false, nil
	c.mu.Unlock()
}

// watch waits for the answer of the message an earlier call sent, if it
// is not waited for already: a call the client makes again after a
// restart of this process.
func (c *conversation) watch() {
	c.mu.Lock()
	c.watching = true
	c.mu.Unlock()
}

// returned notes that a call returned without the answer.
func (c *conversation) returned() {
	c.mu.Lock()
	c.unread = c.watching
	c.mu.Unlock()
}

// waiting reports whether a call returned before the answer came.
func (c *conversation) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unread
}

// take returns the answer if it came, and stops waiting for it.
func (c *conversation) take() *events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := c.answer
	if ev != nil {
		c.watching, c.unread, c.answer = false, false, nil
	}
	return ev
}

// done stops waiting: the call returned the answer it had itself.
func (c *conversation) done() {
	c.mu.Lock()
	c.watching, c.unread, c.answer = false, false, nil
	c.mu.Unlock()
}

// call runs one tool call of agent.
func (m *mcpAgents) call(ctx context.Context, req *mcp.CallToolRequest, agent string, args mcpArgs) *mcp.CallToolResult {
	if strings.TrimSpace(args.Message) == "" {
		return toolError("message is empty: say what to ask the agent")
	}
	key := args.Instance
	if key == "" {
		key = "mcp"
	}
	if err := store.ValidateInstanceKey(key); err != nil {
		return toolError(err.Error())
	}
	c := m.conversation(agent, key)
	select {
	case c.slot <- struct{}{}:
	case <-ctx.Done():
		return toolError(fmt.Sprintf("waiting for the call in progress on %s/%s: %v", agent, key, ctx.Err()))
	}
	defer func() { <-c.slot }()
	cl := &mcpCall{m: m, c: c, req: req, agent: agent, key: key, sent: true}
	if req.Params.RequestState != "" {
		return cl.again(ctx) // the client answers what the call asked it
	}
	if c.waiting() {
		// The instance still works on the message of a call that
		// returned before its answer: this call returns that answer.
		cl.sent = false
		return cl.settle(ctx, 0, "")
	}
	c.begin()
	res, err := m.rt.Send(ctx, agent, key, runtime.UserMessage(args.Message))
	switch {
	case errors.Is(err, runtime.ErrPaused):
		// Paused before this call (by a run in a terminal, or before a
		// restart): what it waits for comes first.
		cl.sent = false
		return cl.settle(ctx, 0, "")
	case err != nil:
		c.done()
		return toolError(err.Error())
	case res.FinishReason == pipeline.FinishPaused, res.FinishReason == pipeline.FinishDelegated:
		return cl.settle(ctx, 0, "")
	}
	c.done()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Response.Content}}}
}

// waitChange waits until a turn ends or an item changes, or a while: a
// call whose instance has nothing open and no task running waits for a
// turn that runs elsewhere (an answer's resume) to end.
func (m *mcpAgents) waitChange(ctx context.Context, changed <-chan struct{}) error {
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
