package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestNewTracerProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flag    string
		env     map[string]string
		wantTo  string // "" for tracing off
		wantErr string
	}{
		{name: "OffByDefault"},
		{name: "Flag", flag: "http://127.0.0.1:4318", wantTo: "http://127.0.0.1:4318/v1/traces"},
		{name: "FlagWithPath", flag: "https://collector.example/otlp/", wantTo: "https://collector.example/otlp/v1/traces"},
		{name: "Endpoint", env: map[string]string{envOTLPEndpoint: "http://127.0.0.1:4318"}, wantTo: "http://127.0.0.1:4318"},
		{name: "TracesEndpoint", env: map[string]string{envOTLPTracesEndpoint: "http://c:4318/v1/traces", envOTLPEndpoint: "http://other:4318"}, wantTo: "http://c:4318/v1/traces"},
		{name: "FlagOverEnv", flag: "http://flag:4318", env: map[string]string{envOTLPEndpoint: "http://env:4318"}, wantTo: "http://flag:4318/v1/traces"},
		{name: "FlagCredentials", flag: "https://user:s3cret@collector.example:4318/?key=K", wantTo: "https://collector.example:4318/v1/traces"},
		{name: "EndpointCredentials", env: map[string]string{envOTLPEndpoint: "http://user:s3cret@c:4318"}, wantTo: "http://c:4318"},
		{name: "FlagNotURL", flag: "127.0.0.1:4318", wantErr: "--otel-endpoint"},
		{name: "FlagBadScheme", flag: "grpc://127.0.0.1:4317", wantErr: "--otel-endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp, to, err := newTracerProvider(context.Background(), tt.flag, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != (tt.wantTo != "") || to != tt.wantTo {
				t.Fatalf("provider %v to %q, want to %q", tp != nil, to, tt.wantTo)
			}
			if tp != nil {
				if err := tp.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}
		})
	}
}

// otlpSink is an OTLP/HTTP collector that keeps what it is sent.
type otlpSink struct {
	mu    sync.Mutex
	paths []string
	spans []*tracepb.Span
	bad   []error
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	if err != nil {
		s.bad = append(s.bad, err)
	}
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans = append(s.spans, ss.GetSpans()...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// TestTracing_OTLPExport runs serve with --otel-endpoint, creates a task
// that a worker runs, and stops the server: before it exits, it sends the
// span of the tools/call and the worker's span, its child, to the
// collector's /v1/traces.
func TestTracing_OTLPExport(t *testing.T) {
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	addr := freeAddr(t)
	p := start(t, addr, "--store", "memory:", "--demo-step", "10ms", "--otel-endpoint", collector.URL)
	c := &rpc{url: p.url, tasks: true}
	id := c.callTool(t, "failing_job", map[string]any{})["taskId"].(string)
	c.waitStatus(t, id, "completed", 10*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.paths) == 0 || len(sink.bad) > 0 {
		t.Fatalf("collector got %q (undecodable: %v), want POSTs of OTLP protobuf", sink.paths, sink.bad)
	}
	for _, path := range sink.paths {
		if path != "POST /v1/traces" {
			t.Errorf("collector got %s, want POST /v1/traces", path)
		}
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range sink.spans {
		byName[s.GetName()] = s
	}
	create, run := byName["tools/call failing_job"], byName["task failing_job"]
	if create == nil || run == nil {
		t.Fatalf("spans %q, want tools/call failing_job and task failing_job", slices.Sorted(maps.Keys(byName)))
	}
	if create.GetKind() != tracepb.Span_SPAN_KIND_SERVER || run.GetKind() != tracepb.Span_SPAN_KIND_CONSUMER {
		t.Errorf("span kinds %s and %s, want server and consumer", create.GetKind(), run.GetKind())
	}
	if !bytes.Equal(run.GetTraceId(), create.GetTraceId()) || !bytes.Equal(run.GetParentSpanId(), create.GetSpanId()) {
		t.Errorf("worker span %x/%x has parent %x, want a child of the tools/call span %x/%x",
			run.GetTraceId(), run.GetSpanId(), run.GetParentSpanId(), create.GetTraceId(), create.GetSpanId())
	}
}
