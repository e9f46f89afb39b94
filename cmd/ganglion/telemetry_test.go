package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP receiver of traces and metrics, over HTTP or gRPC,
// that keeps the names of the spans and metrics it is sent and the service
// that sent them.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []string
	metrics  []string
	services []string
	raw      []byte // every request body, for the canary
}

// metricsService is the collector's gRPC metrics service (its Export
// differs from the trace service's).
type metricsService struct {
	colmetric.UnimplementedMetricsServiceServer
	c *collector
}

func (m metricsService) Export(_ context.Context, req *colmetric.ExportMetricsServiceRequest) (*colmetric.ExportMetricsServiceResponse, error) {
	m.c.keepMetrics(req)
	return &colmetric.ExportMetricsServiceResponse{}, nil
}

// keepMetrics keeps the names of the metrics req carries, once each.
func (c *collector) keepMetrics(req *colmetric.ExportMetricsServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if !slices.Contains(c.metrics, m.Name) {
					c.metrics = append(c.metrics, m.Name)
				}
			}
		}
	}
}

func (c *collector) keep(req *coltrace.ExportTraceServiceRequest, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raw = append(c.raw, raw...)
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" && !slices.Contains(c.services, kv.GetValue().GetStringValue()) {
				c.services = append(c.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, s.Name)
			}
		}
	}
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	raw, _ := proto.Marshal(req)
	c.keep(req, raw)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/metrics" {
		var req colmetric.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.keepMetrics(&req)
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&colmetric.ExportMetricsServiceResponse{})
		w.Write(b)
		return
	}
	if r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.keep(&req, body)
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(b)
}

func (c *collector) got() ([]string, []string, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans), slices.Clone(c.services), slices.Clone(c.raw)
}

func (c *collector) gotMetrics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.metrics)
}

// listen starts c on loopback for protocol and returns its endpoint.
func (c *collector) listen(t *testing.T, protocol string) string {
	t.Helper()
	if protocol == "grpc" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := grpc.NewServer()
		coltrace.RegisterTraceServiceServer(srv, c)
		colmetric.RegisterMetricsServiceServer(srv, metricsService{c: c})
		go srv.Serve(l)
		t.Cleanup(srv.Stop)
		return "http://" + l.Addr().String()
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRunExportsOverOTLP: with only OTEL_EXPORTER_OTLP_ENDPOINT set, a
// short ganglion run exports its turn's spans and its metrics before it
// exits, over HTTP or, with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, over gRPC,
// with --trace too; the last collection, which reads the open pending
// items from the store, comes before the store closes. The message text
// stays out of the export unless the config's telemetry block asks for
// content.
func TestRunExportsOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		name, proto string
		flags       []string
	}{
		{"http", "http/protobuf", nil},
		{"grpc", "grpc", nil},
		{"http with --trace", "http/protobuf", []string{"--trace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.listen(t, tc.proto))
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.proto)
			dir := project(t, testConfig)
			args := append(append([]string{"run"}, tc.flags...), dir, "read the file, secret word zebra-canary")
			r := runCLI(t, "", args...)
			if r.code != 0 {
				t.Fatalf("run: %+v", r)
			}
			if strings.Contains(r.stderr, "exporting") || strings.Contains(r.stderr, "fail") {
				t.Errorf("stderr: %s", r.stderr)
			}
			spans, services, raw := c.got()
			for _, want := range []string{"invoke_agent helper", "step 1", "chat scripted", "execute_tool read_file", "turn audit", "toolCall audit"} {
				if !slices.Contains(spans, want) {
					t.Errorf("the collector got spans %q, not %q", spans, want)
				}
			}
			metrics := c.gotMetrics()
			for _, want := range []string{"ganglion.turn.duration", "gen_ai.client.operation.duration", "ganglion.tool.calls", "ganglion.pending.open"} {
				if !slices.Contains(metrics, want) {
					t.Errorf("the collector got metrics %q, not %q", metrics, want)
				}
			}
			if !slices.Equal(services, []string{"ganglion"}) {
				t.Errorf("services %q, want ganglion", services)
			}
			if strings.Contains(string(raw), "zebra-canary") {
				t.Error("the message's text was exported, with content off")
			}
		})
	}
}

// TestRunTrace: run --trace prints the run's span tree with durations on
// stderr, without a collector.
func TestRunTrace(t *testing.T) {
	dir := project(t, testConfig)
	r := runCLI(t, "", "run", "--trace", dir, "read the file")
	if r.code != 0 || !strings.Contains(r.stdout, "It says: hello world") {
		t.Fatalf("run --trace: %+v", r)
	}
	got := regexp.MustCompile(`  [0-9.]+(µs|ms|s)`).ReplaceAllString(r.stderr, "  D")
	got = regexp.MustCompile(`trace [0-9a-f]{32}`).ReplaceAllString(got, "trace ID")
	want := `trace ID
  invoke_agent helper  D  (finish_reason text_response)
    turn audit  D
      step 1  D
        chat scripted  D
        execute_tool read_file  D
          toolCall audit  D
      step 2  D
        chat scripted  D
`
	if got != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
	}
}

// TestServeAndMCPExportMetrics: ganglion serve and ganglion mcp close
// their runtime as run does, so their last metrics, the open pending
// items read from the store included, reach the collector at exit.
func TestServeAndMCPExportMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string, env []string) string // returns stderr
	}{
		{"serve", func(t *testing.T, dir string, env []string) string {
			_, _, stop := startServeWith(t, dir, env)
			r := stop()
			return r.stderr
		}},
		{"mcp", func(t *testing.T, dir string, env []string) string {
			cmd := exec.Command(cliBinary(t), "mcp", dir)
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
			}
			if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError {
				t.Errorf("helper: %q", text)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			return stderr.String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{}
			env := append(childEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT="+c.listen(t, "http/protobuf"), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
			stderr := tc.run(t, project(t, testConfig), env)
			if strings.Contains(stderr, "exporting") {
				t.Errorf("stderr: %s", stderr)
			}
			if metrics := c.gotMetrics(); !slices.Contains(metrics, "ganglion.pending.open") {
				t.Errorf("the collector got metrics %q, not ganglion.pending.open", metrics)
			}
		})
	}
}
