package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP receiver of traces, over HTTP or gRPC, that keeps
// the names of the spans it is sent and the service that sent them.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []string
	services []string
	raw      []byte // every request body, for the canary
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
	if r.URL.Path != "/v1/traces" {
		w.WriteHeader(http.StatusOK) // metrics: taken, not kept
		return
	}
	body, _ := io.ReadAll(r.Body)
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

// TestRunExportsOverOTLP: with only OTEL_EXPORTER_OTLP_ENDPOINT set, a
// short ganglion run exports its turn's spans before it exits, over HTTP
// or, with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, over gRPC; its message text
// stays out of them unless the config's telemetry block asks for content.
func TestRunExportsOverOTLP(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			c := &collector{}
			endpoint := ""
			if proto == "grpc" {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				must(t, err)
				srv := grpc.NewServer()
				coltrace.RegisterTraceServiceServer(srv, c)
				go srv.Serve(l)
				t.Cleanup(srv.Stop)
				endpoint = "http://" + l.Addr().String()
			} else {
				srv := httptest.NewServer(c)
				t.Cleanup(srv.Close)
				endpoint = srv.URL
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_METRICS_EXPORTER", "none")
			dir := project(t, testConfig)
			r := runCLI(t, "", "run", dir, "read the file, secret word zebra-canary")
			if r.code != 0 {
				t.Fatalf("run: %+v", r)
			}
			spans, services, raw := c.got()
			for _, want := range []string{"invoke_agent helper", "step 1", "chat scripted", "execute_tool read_file", "turn audit", "toolCall audit"} {
				if !slices.Contains(spans, want) {
					t.Errorf("the collector got %q, not %q", spans, want)
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
