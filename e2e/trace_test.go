package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/otlp/otlptest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// collector keeps the spans an OTLP receiver was sent.
type collector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	service  string
	requests int
}

func (c *collector) add(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				c.service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
}

// httpReceiver is an OTLP/HTTP (protobuf) receiver on 127.0.0.1.
func httpReceiver(t *testing.T, c *collector) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		if r.Header.Get("X-Test-Token") != "s3cret" {
			http.Error(w, "OTEL_EXPORTER_OTLP_HEADERS not sent", http.StatusUnauthorized)
			return
		}
		req, err := otlptest.ReadHTTP(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.add(req)
		otlptest.WriteHTTP(w, nil)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// grpcReceiver is an OTLP/gRPC trace service on 127.0.0.1.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	c *collector
}

func (g *grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.c.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func startGRPCReceiver(t *testing.T, c *collector) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, &grpcReceiver{c: c})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// tracedRun runs `wiggum run --workers 2` over two stories with a scripted
// agent that reports its cost and tokens; US-1's gate fails once, so it is
// rolled back and retried.
func tracedRun(t *testing.T, env []string) result {
	t.Helper()
	dir := planRepo(t, 2)
	ctl := t.TempDir()
	agent := filepath.Join(ctl, "agent.sh")
	script := `#!/bin/sh
cat >/dev/null
echo '{"type":"result","subtype":"success","total_cost_usd":0.25,"usage":{"input_tokens":1000,"output_tokens":50}}'
echo "$WIGGUM_ITERATION" > "file-$WIGGUM_STORY.txt"
`
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gate := `if [ -e file-US-1.txt ] && [ ! -e ` + ctl + `/failed-once ]; then touch ` + ctl + `/failed-once; exit 1; fi`
	r := wiggum(t, dir, env, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", agent, "--test-cmd", gate)
	if r.code != 0 {
		t.Fatalf("run exited %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return r
}

// TestTraceExport: with the standard OTLP variables a run exports one
// trace - run > story > attempt > agent, gate, rollback; story > merge -
// with story ids, outcomes, tokens and cost, over OTLP/HTTP and over gRPC.
func TestTraceExport(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			c := &collector{}
			var env []string
			if proto == "grpc" {
				env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + startGRPCReceiver(t, c), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
			} else {
				env = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + httpReceiver(t, c) + "/v1/traces", "OTEL_EXPORTER_OTLP_HEADERS=X-Test-Token=s3cret"}
			}
			env = append(env, "OTEL_SERVICE_NAME=wiggum-e2e")
			tracedRun(t, env)
			c.mu.Lock()
			defer c.mu.Unlock()
			checkTrace(t, c)
		})
	}
}

func checkTrace(t *testing.T, c *collector) {
	t.Helper()
	if c.service != "wiggum-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's wiggum-e2e", c.service)
	}
	byID := map[string]*tracepb.Span{}
	traces := map[string]bool{}
	for _, s := range c.spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		traces[hex.EncodeToString(s.TraceId)] = true
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want one", len(traces))
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	// The tree, as lines "parent-name(story) > name(story) outcome".
	var tree []string
	for _, s := range c.spans {
		line := ""
		if p := parent(s); p != nil {
			line = label(p) + " > "
		} else if len(s.ParentSpanId) > 0 {
			t.Errorf("span %s has a parent that was not exported", s.Name)
		}
		tree = append(tree, line+label(s)+" "+attr(s, "wiggum.outcome"))
	}
	sort.Strings(tree)
	want := []string{
		"wiggum.run done",
		"wiggum.attempt(US-1) > wiggum.agent ",
		"wiggum.attempt(US-1) > wiggum.agent ",
		"wiggum.attempt(US-1) > wiggum.gate ",
		"wiggum.attempt(US-1) > wiggum.gate ",
		"wiggum.attempt(US-1) > wiggum.rollback(US-1) ",
		"wiggum.attempt(US-2) > wiggum.agent ",
		"wiggum.attempt(US-2) > wiggum.gate ",
		"wiggum.run > wiggum.story(US-1) done",
		"wiggum.run > wiggum.story(US-2) done",
		"wiggum.story(US-1) > wiggum.attempt(US-1) done",
		"wiggum.story(US-1) > wiggum.attempt(US-1) failed (gate)",
		"wiggum.story(US-1) > wiggum.merge(US-1) merged",
		"wiggum.story(US-2) > wiggum.attempt(US-2) done",
		"wiggum.story(US-2) > wiggum.merge(US-2) merged",
	}
	sort.Strings(want)
	if strings.Join(tree, "\n") != strings.Join(want, "\n") {
		t.Errorf("span tree:\n%s\nwant:\n%s", strings.Join(tree, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range c.spans {
		switch s.Name {
		case "wiggum.attempt", "wiggum.agent":
			if attr(s, "wiggum.cost_usd") != "0.25" || attr(s, "gen_ai.usage.input_tokens") != "1000" || attr(s, "gen_ai.usage.output_tokens") != "50" {
				t.Errorf("%s(%s): cost %s, tokens %s/%s; want 0.25, 1000/50", s.Name, attr(s, "wiggum.story.id"), attr(s, "wiggum.cost_usd"), attr(s, "gen_ai.usage.input_tokens"), attr(s, "gen_ai.usage.output_tokens"))
			}
		case "wiggum.story":
			want := "0.25"
			if attr(s, "wiggum.story.id") == "US-1" {
				want = "0.5" // two attempts
			}
			if attr(s, "wiggum.cost_usd") != want {
				t.Errorf("story %s cost %s, want %s (retries included)", attr(s, "wiggum.story.id"), attr(s, "wiggum.cost_usd"), want)
			}
		case "wiggum.run":
			if attr(s, "wiggum.cost_usd") != "0.75" || attr(s, "wiggum.workers") != "2" || attr(s, "wiggum.plan") != "plan.md" || attr(s, "wiggum.branch") == "" {
				t.Errorf("run span attributes: %v", s.Attributes)
			}
		case "wiggum.gate":
			if attr(s, "process.exit.code") == "1" && s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("the failed gate's span is not an error")
			}
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano {
			t.Errorf("%s ends before it starts", s.Name)
		}
		if p := parent(s); p != nil && (s.StartTimeUnixNano < p.StartTimeUnixNano || s.EndTimeUnixNano > p.EndTimeUnixNano) {
			t.Errorf("%s(%s) is not within its parent %s", s.Name, attr(s, "wiggum.story.id"), p.Name)
		}
	}
}

func label(s *tracepb.Span) string {
	if id := attr(s, "wiggum.story.id"); id != "" {
		return s.Name + "(" + id + ")"
	}
	return s.Name
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return anyValue(kv.Value)
		}
	}
	return ""
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return fmt.Sprint(v)
}

// TestTraceNotConfigured: without the OTLP variables nothing is sent, not
// even to the default endpoints (4317, 4318 on localhost), which this test
// listens on; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn export
// off even with an endpoint set.
func TestTraceNotConfigured(t *testing.T) {
	var mu sync.Mutex
	got := 0
	for _, port := range []string{"4317", "4318"} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("listen on the default OTLP port %s: %v", port, err)
			}
			t.Logf("port %s is taken (%v); this part of the check is left out", port, err)
			continue
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				got++
				mu.Unlock()
				c.Close()
			}
		}()
	}
	c := &collector{}
	endpoint := httpReceiver(t, c)
	tracedRun(t, nil)
	tracedRun(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_SDK_DISABLED=true"})
	tracedRun(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_TRACES_EXPORTER=none"})
	mu.Lock()
	defer mu.Unlock()
	if got != 0 || c.requests != 0 {
		t.Errorf("without tracing configured: %d connection(s) to the default ports, %d export(s) to the endpoint", got, c.requests)
	}
}

// TestTraceHangingCollector: a collector that accepts and never answers
// does not hang the run: it ends (exit 0) after the bounded export wait
// and says the spans were not exported.
func TestTraceHangingCollector(t *testing.T) {
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { close(release); _ = srv.Close() })
	r := tracedRun(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String()})
	if !strings.Contains(r.stderr, "spans not exported") && !strings.Contains(r.stderr, "telemetry") {
		t.Errorf("the run does not say its spans were lost:\n%s", r.stderr)
	}
}

// TestTraceBadProtocol: an unsupported protocol is exit 2, before the run
// changes anything.
func TestTraceBadProtocol(t *testing.T) {
	dir := planRepo(t, 1)
	before := snapshot(t, dir)
	r := wiggum(t, dir, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "run", "--plan", "plan.md", "--agent-cmd", "true")
	if r.code != 2 || !strings.Contains(r.stderr, `OTEL_EXPORTER_OTLP_PROTOCOL "http/json" is not supported`) {
		t.Errorf("exit %d, stderr %q; want 2 naming the protocol", r.code, r.stderr)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("a refused run changed the repository:\n%s", diffLines(before, after))
	}
}
