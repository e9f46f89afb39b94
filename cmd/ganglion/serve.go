package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/server"
)

// defaultAddr is where ganglion serve listens without --addr: loopback only.
const defaultAddr = "127.0.0.1:7070"

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		f               runFlags
		h               = httpFlags{flag: "--addr"}
		shutdownTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [DIR]",
		Short: "Serve DIR's agents over HTTP: messages, event streams, pending items",
		Long: `Serve runs the agents of DIR/ganglion.yaml behind an HTTP API (see the
documentation of package runtime/server): send messages and stream the
turns' events, follow every event, list and answer what paused agents
wait for, read histories and tasks. At / it serves the web console, and at
/mcp the agents as MCP tools (see ganglion mcp).

Every call needs the server's token (Authorization: Bearer TOKEN). It is
made on the first start, kept next to the data directory's secret key
(.ganglion/data.token, mode 0600), and printed once; read it from there
afterwards. The server listens on ` + defaultAddr + ` unless --addr says
otherwise; an address other than loopback needs --tls-cert and --tls-key,
so that the token never crosses a network in clear.

While it runs, ganglion run, pending, answer, skip, provide, reject, tasks
and history on the same config talk to it (it says where it listens in
.ganglion/data.server) instead of failing on the locked data directory.

With --cluster (or the config's cluster block), several serve processes on
the same config and the same NATS run one set of agents: each instance runs
on the process that owns it, delegations spread over them, and every
process's event stream shows every agent's events. Give each process its
own --data (where its token is kept) and the same ` + runtime.SecretKeyEnv + `.

Interrupt it (Ctrl-C, or SIGTERM) to stop: it takes no new call, and the
turns in flight get ` + "--shutdown-timeout" + ` to finish, those that other processes
of a cluster sent here too; a turn still running then is cut (the resume
of an answered item is finished by the instance's next owner).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			if err := h.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			gui := server.NewGUI() // browser clients' answers, kept while they are away
			rt, _, err := openRuntime(ctx, f, dir, stderr, runtime.WithChannel(server.ChannelGUI, gui))
			if err != nil {
				return err
			}
			defer rt.Close()
			cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
			if err != nil {
				return failed(err)
			}
			data := cfg.Data
			if f.data != "" {
				if data, err = filepath.Abs(f.data); err != nil {
					return failed(err)
				}
			}
			logger, _ := newLogger(stderr, f.logLevel)
			sopts := []server.Option{server.WithGUI(gui)}
			if hooks, err := webhooks(cfg); err != nil {
				return err
			} else if len(hooks) > 0 {
				sopts = append(sopts, server.WithWebhooks(data+".outbox", hooks...))
			}
			agents := newMCPAgents(rt, place(dir, f.data), logger)
			defer agents.close()
			web, err := listenHTTP(rt, h, dir, data, logger, agents.server(), sopts...)
			if err != nil {
				return err
			}
			agents.reachable(web.url, web.tokenFile)
			web.serve()
			fmt.Fprintf(stdout, "serving the agents of %s on %s/v1/\n", dir, web.url)
			fmt.Fprintf(stdout, "web console: %s/\n", web.url)
			fmt.Fprintln(stdout, web.tokenLine())
			select {
			case err := <-web.done():
				web.stop(context.Background())
				return failed(fmt.Errorf("serve: %w", err))
			case <-ctx.Done():
			}
			fmt.Fprintln(stderr, "stopping: finishing the calls in flight")
			if err := stopAll(web, rt, shutdownTimeout); err != nil {
				return failed(fmt.Errorf("stop: %w", err))
			}
			return nil
		},
	}
	addRuntimeFlags(cmd, &f)
	cmd.Flags().StringVar(&h.addr, "addr", defaultAddr, "HOST:PORT to listen on (port 0: any free port, printed)")
	cmd.Flags().StringVar(&h.cert, "tls-cert", "", "TLS certificate file (PEM), to serve HTTPS")
	cmd.Flags().StringVar(&h.key, "tls-key", "", "TLS key file (PEM) of --tls-cert")
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long the calls and turns in flight may take to finish when the server stops")
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "join the cluster at these NATS URLs (nats://host:4222, comma-separated), as the config's cluster.url: several processes run the config as one system; needs "+runtime.SecretKeyEnv+", the same in each")
	return cmd
}

// dataDir is the data directory a command uses: --data, else the config's.
func dataDir(f runFlags, dir string) (string, error) {
	if f.data != "" {
		return filepath.Abs(f.data)
	}
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	if err != nil {
		return "", err
	}
	return cfg.Data, nil
}

// serverToken reads the token in path, or makes one and writes it there
// (mode 0600); made says it did.
func serverToken(path string) (token string, made bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		fi, err := os.Stat(path)
		if err != nil {
			return "", false, err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return "", false, fmt.Errorf("server token %s: mode %v lets others read it: chmod 600 %s", path, fi.Mode().Perm(), path)
		}
		t := strings.TrimSpace(string(b))
		if len(t) < 32 {
			return "", false, fmt.Errorf("server token %s: %d characters, want at least 32: delete the file to have a new one made", path, len(t))
		}
		return t, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("server token: %w", err)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	token = hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("server token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("server token: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("server token: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("server token: %w", err)
	}
	return token, true, nil
}

// webhooks returns the config's webhooks with their secrets, read from the
// environment.
func webhooks(cfg *config.File) ([]server.Webhook, error) {
	var out []server.Webhook
	for i, h := range cfg.Webhooks {
		secret := os.Getenv(h.SecretEnv)
		if secret == "" {
			return nil, usageError("webhooks[%d] (%s): the environment variable %s, its signing secret, is not set", i, h.URL, h.SecretEnv)
		}
		out = append(out, server.Webhook{URL: h.URL, Secret: secret, Events: h.Events})
	}
	return out, nil
}
