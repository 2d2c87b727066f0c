package otlp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/otlp/otlptest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the receiver accepts gzip, as collectors do
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		env       map[string]string
		url       string
		proto     string
		insecure  bool
		gzip      bool
		timeout   time.Duration
		headers   map[string]string
		wantError string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, url: "http://127.0.0.1:4318/v1/traces", proto: ProtocolHTTP, insecure: true, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com/base/"}, url: "https://otel.example.com/base/v1/traces", proto: ProtocolHTTP, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/custom"}, url: "http://b:2/custom", proto: ProtocolHTTP, insecure: true, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2"}, url: "http://b:2/", proto: ProtocolHTTP, insecure: true, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317/ignored", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, url: "http://c:4317" + grpcExportPath, proto: ProtocolGRPC, insecure: true, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, url: "https://collector:4317" + grpcExportPath, proto: ProtocolGRPC, timeout: DefaultTimeout},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, url: "http://collector:4317" + grpcExportPath, proto: ProtocolGRPC, insecure: true, timeout: DefaultTimeout},
		{
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_HEADERS": "a=1, Api-Key = x%20y ", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
				"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500"},
			url: "http://h:1/v1/traces", proto: ProtocolHTTP, insecure: true, gzip: true, timeout: 1500 * time.Millisecond, headers: map[string]string{"b": "2"},
		},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_HEADERS": "a=1, Api-Key = x%20y "}, url: "http://h:1/v1/traces", proto: ProtocolHTTP, insecure: true, timeout: DefaultTimeout, headers: map[string]string{"a": "1", "Api-Key": "x y"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantError: `OTEL_EXPORTER_OTLP_PROTOCOL "http/json" is not supported`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, wantError: "is not key=value"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, wantError: "milliseconds"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "99999999999999"}, wantError: "milliseconds"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, wantError: "COMPRESSION"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "h:1"}, wantError: "not an http:// or https:// URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:99999"}, wantError: "port 99999 (host 127.0.0.1) is out of range"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:0", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantError: "port 0 (host collector) is out of range"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://h:1", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantError: "CERTIFICATE"},
		{env: map[string]string{}, wantError: "no OTLP endpoint"},
	} {
		cfg, err := ConfigFromEnv(env(c.env))
		if c.wantError != "" {
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.wantError) {
				t.Errorf("%v: err = %v, want a ConfigError with %q", c.env, err, c.wantError)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		if cfg.URL != c.url || cfg.Protocol != c.proto || cfg.Insecure != c.insecure || cfg.Gzip != c.gzip || cfg.Timeout != c.timeout || len(cfg.Headers) != len(c.headers) {
			t.Errorf("%v:\ngot  %+v\nwant url %s proto %s insecure %v gzip %v timeout %v headers %v", c.env, cfg, c.url, c.proto, c.insecure, c.gzip, c.timeout, c.headers)
		}
		for k, v := range c.headers {
			if cfg.Headers[k] != v {
				t.Errorf("%v: header %s = %q, want %q", c.env, k, cfg.Headers[k], v)
			}
		}
	}
}

// A malformed OTEL_EXPORTER_OTLP_HEADERS is named by its place and header
// name, never its text: "x-honeycomb-team: KEY" printed the API key.
func TestBadHeadersHideTheirValues(t *testing.T) {
	for _, c := range []struct{ headers, want string }{
		{"x-honeycomb-team: hcaik_SECRETKEY123", "pair 1 of 1 (header x-honeycomb-team) is not key=value; write it x-honeycomb-team=VALUE"},
		{"a=1,Authorization: Bearer SECRET=x", "pair 2 of 2 (header Authorization) is not key=value"},
		{"hcaik_SECRETKEY123", "pair 1 of 1 is not key=value (not shown"},
		{"a b SECRET=1", "pair 1 of 1 is not key=value (not shown"},
		{"k=SECRET%zz", "the value of k is not URL-encoded"},
	} {
		_, err := ConfigFromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1", "OTEL_EXPORTER_OTLP_HEADERS": c.headers}))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "%zz") {
			t.Errorf("%q: %v, want a ConfigError with %q and no secret", c.headers, err, c.want)
		}
	}
}

// receiver keeps what an OTLP receiver decoded with the official types.
type receiver struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	headers  []map[string]string
}

func (r *receiver) add(req *coltracepb.ExportTraceServiceRequest, h map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	r.headers = append(r.headers, h)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// httpReceiver is an OTLP/HTTP protobuf receiver; answer, when set, picks
// the status of each request (by number, from 0) and the partial success
// to report.
func httpReceiver(t *testing.T, r *receiver, answer func(n int) (int, *coltracepb.ExportTracePartialSuccess)) string {
	t.Helper()
	ln := listen(t)
	n := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		code, partial := http.StatusOK, (*coltracepb.ExportTracePartialSuccess)(nil)
		if answer != nil {
			code, partial = answer(n)
		}
		n++
		if code != http.StatusOK {
			http.Error(w, "try later", code)
			return
		}
		m, err := otlptest.ReadHTTP(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.add(m, map[string]string{"x-token": req.Header.Get("X-Token"), "encoding": req.Header.Get("Content-Encoding")})
		otlptest.WriteHTTP(w, partial)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// grpcService is the OTLP trace service on the official gRPC server.
type grpcService struct {
	coltracepb.UnimplementedTraceServiceServer
	r      *receiver
	answer func(n int) (*coltracepb.ExportTracePartialSuccess, error)
	n      int

	encoding string // the last call's grpc-encoding, as the server's transport saw it
}

// The gRPC server keeps grpc-encoding out of the metadata; its stats
// handler sees it.
func (g *grpcService) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (g *grpcService) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (g *grpcService) HandleConn(context.Context, stats.ConnStats) {}
func (g *grpcService) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		g.r.mu.Lock()
		g.encoding = h.Compression
		g.r.mu.Unlock()
	}
}

func (g *grpcService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	g.r.mu.Lock()
	n := g.n
	g.n++
	g.r.mu.Unlock()
	var partial *coltracepb.ExportTracePartialSuccess
	if g.answer != nil {
		var err error
		if partial, err = g.answer(n); err != nil {
			return nil, err
		}
	}
	g.r.mu.Lock()
	encoding := g.encoding
	g.r.mu.Unlock()
	g.r.add(req, map[string]string{"x-token": first("x-token"), "encoding": encoding})
	return &coltracepb.ExportTraceServiceResponse{PartialSuccess: partial}, nil
}

func grpcReceiver(t *testing.T, g *grpcService) string {
	t.Helper()
	ln := listen(t)
	srv := grpc.NewServer(grpc.StatsHandler(g))
	coltracepb.RegisterTraceServiceServer(srv, g)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

func exporter(t *testing.T, vars map[string]string) *Exporter {
	t.Helper()
	cfg, err := ConfigFromEnv(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	e := New(cfg, "test")
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

// checkReceived: each request the receiver decoded equals, field for
// field, the request the official types decode from EncodeRequest.
func checkReceived(t *testing.T, r *receiver, want int, token, encoding string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) != want {
		t.Fatalf("%d requests received, want %d", len(r.requests), want)
	}
	exp := decode(t, EncodeRequest(testSpans()))
	for i, req := range r.requests {
		got := decode(t, mustMarshal(t, req))
		if !proto.Equal(got, exp) {
			t.Errorf("request %d differs from the spans sent:\n%v", i, got)
		}
		if r.headers[i]["x-token"] != token || r.headers[i]["encoding"] != encoding {
			t.Errorf("request %d headers %v, want x-token %q, encoding %q", i, r.headers[i], token, encoding)
		}
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExport: over OTLP/HTTP, to a receiver on the official types, and over
// OTLP/gRPC in plaintext HTTP/2, to the official gRPC server with the
// official trace service; plain and gzip, OTEL_EXPORTER_OTLP_HEADERS sent as
// headers (gRPC: metadata).
func TestExport(t *testing.T) {
	transports := map[string]func(r *receiver) map[string]string{
		"http": func(r *receiver) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": httpReceiver(t, r, nil)}
		},
		"grpc": func(r *receiver) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": grpcReceiver(t, &grpcService{r: r}), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
		},
	}
	for name, listen := range transports {
		for _, gz := range []bool{false, true} {
			r := &receiver{}
			vars := listen(r)
			vars["OTEL_EXPORTER_OTLP_HEADERS"] = "X-Token=s3cret"
			encoding := ""
			if gz {
				vars["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
				encoding = "gzip"
			}
			if err := exporter(t, vars).ExportSpans(context.Background(), testSpans()); err != nil {
				t.Fatalf("%s, gzip %v: %v", name, gz, err)
			}
			checkReceived(t, r, 1, "s3cret", encoding)
		}
	}
}

// TestRetryAndErrors: a transient refusal is retried (HTTP 503, gRPC
// UNAVAILABLE) and the spans arrive once; a permanent one (HTTP 400, gRPC
// INVALID_ARGUMENT) is an error naming it, not retried; a partial success
// is an error with the collector's count and message.
func TestRetryAndErrors(t *testing.T) {
	partial := &coltracepb.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}
	t.Run("http", func(t *testing.T) {
		r := &receiver{}
		url := httpReceiver(t, r, func(n int) (int, *coltracepb.ExportTracePartialSuccess) {
			switch n {
			case 0:
				return http.StatusServiceUnavailable, nil
			case 1:
				return http.StatusOK, nil
			case 2:
				return http.StatusBadRequest, nil
			}
			return http.StatusOK, partial
		})
		e := exporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
		if err := e.ExportSpans(context.Background(), testSpans()); err != nil {
			t.Fatalf("after a 503: %v", err)
		}
		checkReceived(t, r, 1, "", "")
		if err := e.ExportSpans(context.Background(), testSpans()); err == nil || !strings.Contains(err.Error(), "400") {
			t.Errorf("a 400 gives %v, want an error naming it", err)
		}
		var pe *PartialSuccessError
		if err := e.ExportSpans(context.Background(), testSpans()); !errors.As(err, &pe) || pe.Rejected != 2 || pe.Message != "too old" {
			t.Errorf("partial success gives %v", err)
		}
	})
	t.Run("grpc", func(t *testing.T) {
		r := &receiver{}
		url := grpcReceiver(t, &grpcService{r: r, answer: func(n int) (*coltracepb.ExportTracePartialSuccess, error) {
			switch n {
			case 0:
				return nil, status.Error(codes.Unavailable, "starting")
			case 1:
				return nil, nil
			case 2:
				return nil, status.Error(codes.InvalidArgument, "bad spans: 100%")
			}
			return partial, nil
		}})
		e := exporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
		if err := e.ExportSpans(context.Background(), testSpans()); err != nil {
			t.Fatalf("after UNAVAILABLE: %v", err)
		}
		checkReceived(t, r, 1, "", "")
		if err := e.ExportSpans(context.Background(), testSpans()); err == nil || !strings.Contains(err.Error(), "INVALID_ARGUMENT: bad spans: 100%") {
			t.Errorf("INVALID_ARGUMENT gives %v, want an error with its code and message", err)
		}
		var pe *PartialSuccessError
		if err := e.ExportSpans(context.Background(), testSpans()); !errors.As(err, &pe) || pe.Rejected != 2 || pe.Message != "too old" {
			t.Errorf("partial success gives %v", err)
		}
	})
}

// hangingCollector accepts connections and never answers (nor reads: the
// HTTP/2 preface gets no settings back).
func hangingCollector(t *testing.T) string {
	t.Helper()
	ln := listen(t)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestHangingCollector: a collector that never answers costs an export
// its timeout (OTEL_EXPORTER_OTLP_TIMEOUT), then an error; and Shutdown
// ends an export in flight whatever its timeout.
func TestHangingCollector(t *testing.T) {
	for _, proto := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			url := hangingCollector(t)
			e := exporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": proto, "OTEL_EXPORTER_OTLP_TIMEOUT": "200"})
			if err := e.ExportSpans(context.Background(), testSpans()); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("export to a hanging collector: %v, want the deadline", err)
			}

			e = exporter(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": proto, "OTEL_EXPORTER_OTLP_TIMEOUT": "3600000"})
			done := make(chan error, 1)
			go func() { done <- e.ExportSpans(context.Background(), testSpans()) }()
			if err := e.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err == nil {
				t.Error("an export cut by Shutdown reports success")
			}
		})
	}
}

func TestGRPCTimeout(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "1m"},
		{time.Microsecond, "1m"},
		{1500 * time.Microsecond, "2m"},
		{10 * time.Second, "10000m"},
		{99_999_999 * time.Millisecond, "99999999m"},
		{100_000_000 * time.Millisecond, "28H"},
		{1 << 62, "1281024H"},
	} {
		if got := grpcTimeout(c.d); got != c.want {
			t.Errorf("grpcTimeout(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
