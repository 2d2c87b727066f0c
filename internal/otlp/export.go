// Package otlp sends the OpenTelemetry SDK's spans to an OTLP collector over
// OTLP/HTTP (protobuf) or OTLP/gRPC, configured by the standard
// OTEL_EXPORTER_OTLP_* variables as the official exporters read them. It
// writes the protobuf wire format itself and speaks gRPC's unary framing over
// net/http's HTTP/2, so no protobuf or gRPC runtime is linked: their package
// inits would otherwise cost every wiggum process, hooks included, about
// 1.7 ms at start.
package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultTimeout is an export's bound when OTEL_EXPORTER_OTLP_TIMEOUT does
// not set one (the specification's default).
const DefaultTimeout = 10 * time.Second

// grpcExportPath is the gRPC method of the OTLP trace service.
const grpcExportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// maxTimeoutMS is the longest OTEL_EXPORTER_OTLP_TIMEOUT taken (a year; a
// larger one would overflow a time.Duration's nanoseconds soon after).
const maxTimeoutMS = 365 * 24 * 3600 * 1000

// maxResponse bounds how much of a collector's answer is read.
const maxResponse = 64 << 10

// ConfigError is an OTEL_EXPORTER_OTLP_* variable the exporter cannot use.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// Config is where and how spans are sent.
type Config struct {
	Protocol string // ProtocolHTTP or ProtocolGRPC
	// URL is the full request URL: the OTLP/HTTP traces URL, or the gRPC
	// method's URL on the collector (http:// for plaintext HTTP/2).
	URL      string
	Headers  map[string]string
	Gzip     bool
	Timeout  time.Duration
	TLS      *tls.Config // nil: the system's roots
	Insecure bool
}

// ConfigFromEnv reads the OTEL_EXPORTER_OTLP_* variables (the TRACES_
// variant of each over the general one): ENDPOINT, PROTOCOL, HEADERS,
// COMPRESSION, TIMEOUT, INSECURE, CERTIFICATE, CLIENT_CERTIFICATE and
// CLIENT_KEY. getenv is os.Getenv outside tests.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(name string) (string, bool) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v, true
		}
		v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
		return v, v != ""
	}
	cfg := Config{Protocol: ProtocolHTTP, Timeout: DefaultTimeout}
	if p, ok := get("PROTOCOL"); ok {
		if p != ProtocolHTTP && p != ProtocolGRPC {
			return cfg, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported; use %s or %s", p, ProtocolHTTP, ProtocolGRPC)}
		}
		cfg.Protocol = p
	}

	// The endpoint. For OTLP/HTTP the general one is a base URL that gets
	// /v1/traces, the per-signal one is used as it is; for gRPC only the
	// host and port count, and a URL without a scheme is host:port.
	raw, perSignal := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")), true
	if raw == "" {
		raw, perSignal = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), false
	}
	if raw == "" {
		return cfg, &ConfigError{"no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT"}
	}
	u, err := url.Parse(raw)
	scheme := ""
	if err == nil {
		scheme = strings.ToLower(u.Scheme)
	}
	var host, urlPath string
	switch {
	case err == nil && (scheme == "http" || scheme == "https") && u.Host != "":
		host, urlPath = u.Host, u.Path
		cfg.Insecure = scheme == "http"
	case cfg.Protocol == ProtocolGRPC && !strings.Contains(raw, "/"):
		host = raw // host:port, secure unless OTEL_EXPORTER_OTLP_INSECURE
	default:
		return cfg, &ConfigError{fmt.Sprintf("OTLP endpoint %q is not an http:// or https:// URL", raw)}
	}
	if h, port, err := net.SplitHostPort(host); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfg, &ConfigError{fmt.Sprintf("the OTLP endpoint's port %s (host %s) is out of range: a port is 1 to 65535", port, h)}
		}
	}
	if v, ok := get("INSECURE"); ok {
		cfg.Insecure = strings.EqualFold(v, "true")
	}
	scheme = "https"
	if cfg.Insecure {
		scheme = "http"
	}
	switch {
	case cfg.Protocol == ProtocolGRPC:
		urlPath = grpcExportPath
	case perSignal:
		if urlPath == "" {
			urlPath = "/"
		}
	default:
		urlPath = path.Join("/", urlPath, "v1/traces")
	}
	cfg.URL = (&url.URL{Scheme: scheme, Host: host, Path: urlPath}).String()

	if v, ok := get("HEADERS"); ok {
		if cfg.Headers, err = parseHeaders(v); err != nil {
			return cfg, err
		}
	}
	if v, ok := get("COMPRESSION"); ok {
		switch v {
		case "gzip":
			cfg.Gzip = true
		case "none":
		default:
			return cfg, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_COMPRESSION %q is not supported; use gzip or none", v)}
		}
	}
	if v, ok := get("TIMEOUT"); ok {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 || ms > maxTimeoutMS {
			return cfg, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_TIMEOUT %q is not a number of milliseconds (up to a year)", v)}
		}
		if ms > 0 {
			cfg.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	tlsCfg := &tls.Config{}
	if v, ok := get("CERTIFICATE"); ok {
		pem, err := os.ReadFile(v)
		if err != nil {
			return cfg, &ConfigError{"OTEL_EXPORTER_OTLP_CERTIFICATE: " + err.Error()}
		}
		tlsCfg.RootCAs = x509.NewCertPool()
		if !tlsCfg.RootCAs.AppendCertsFromPEM(pem) {
			return cfg, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_CERTIFICATE: no PEM certificate in %s", v)}
		}
	}
	certFile, okc := get("CLIENT_CERTIFICATE")
	keyFile, okk := get("CLIENT_KEY")
	if okc && okk {
		crt, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return cfg, &ConfigError{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY: " + err.Error()}
		}
		tlsCfg.Certificates = []tls.Certificate{crt}
	}
	if tlsCfg.RootCAs != nil || tlsCfg.Certificates != nil {
		if cfg.Insecure {
			return cfg, &ConfigError{"a TLS certificate is set for an insecure (http://) OTLP endpoint"}
		}
		cfg.TLS = tlsCfg
	}
	return cfg, nil
}

// parseHeaders reads "key1=value1,key2=value2" (values URL-encoded), as the
// specification writes OTEL_EXPORTER_OTLP_HEADERS. An error names a bad
// pair by its place and header name, never by its text: a header's value
// is what holds the API key, and CI logs keep stderr.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	pairs := strings.Split(s, ",")
	for i, pair := range pairs {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !headerName(k) {
			which := fmt.Sprintf("pair %d of %d", i+1, len(pairs))
			// "name: value" is the mistake people make: the name
			// says which header without its value.
			if name, _, colon := strings.Cut(pair, ":"); colon && headerName(strings.TrimSpace(name)) {
				name = strings.TrimSpace(name)
				return nil, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_HEADERS: %s (header %s) is not key=value; write it %s=VALUE (its value is not shown)", which, name, name)}
			}
			return nil, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_HEADERS: %s is not key=value (not shown: it may hold a secret)", which)}
		}
		val, err := url.PathUnescape(v)
		if err != nil {
			return nil, &ConfigError{fmt.Sprintf("OTEL_EXPORTER_OTLP_HEADERS: the value of %s is not URL-encoded: a %% not followed by two hex digits (the value is not shown)", k)}
		}
		h[k] = strings.TrimSpace(val)
	}
	return h, nil
}

// headerName reports whether k can be an HTTP header's name.
func headerName(k string) bool {
	return k != "" && !strings.ContainsAny(k, " \t\r\n:\"(),/;<=>?@[\\]{}")
}

// Exporter is an sdktrace.SpanExporter that sends OTLP.
type Exporter struct {
	cfg       Config
	client    *http.Client
	userAgent string

	stopOnce sync.Once
	stop     chan struct{} // closed by Shutdown: in-flight exports end
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New makes an exporter for cfg; version goes in its User-Agent.
func New(cfg Config, version string) *Exporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	if cfg.Protocol == ProtocolGRPC {
		// gRPC is HTTP/2 only: over TLS by ALPN, in plaintext by prior
		// knowledge (h2c), as gRPC clients connect.
		tr.Protocols = new(http.Protocols)
		if cfg.Insecure {
			tr.Protocols.SetUnencryptedHTTP2(true)
		} else {
			tr.Protocols.SetHTTP2(true)
		}
		tr.Proxy = nil
	}
	return &Exporter{
		cfg:       cfg,
		client:    &http.Client{Transport: tr},
		userAgent: "wiggum/" + version + " OTLP exporter",
		stop:      make(chan struct{}),
	}
}

// ExportSpans sends spans in one request, retrying what the protocol calls
// transient (HTTP 429, 502, 503, 504; gRPC UNAVAILABLE and kin) with backoff,
// all within the configured timeout; Shutdown cuts it short.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := EncodeRequest(spans)
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := time.Second
	for {
		var err error
		var retryAfter time.Duration
		if e.cfg.Protocol == ProtocolGRPC {
			retryAfter, err = e.sendGRPC(ctx, body)
		} else {
			retryAfter, err = e.sendHTTP(ctx, body)
		}
		if err == nil || retryAfter < 0 {
			return err
		}
		if retryAfter == 0 {
			retryAfter = wait
			wait = min(2*wait, 30*time.Second)
		}
		t := time.NewTimer(retryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (then %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// Shutdown ends any export in flight; the exporter is not used after it.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.stopOnce.Do(func() { close(e.stop) })
	e.client.CloseIdleConnections()
	return ctx.Err()
}

// noRetry marks an error that a retry cannot mend.
const noRetry = -1

func (e *Exporter) payload(body []byte) ([]byte, error) {
	if !e.cfg.Gzip {
		return body, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sendHTTP posts one OTLP/HTTP protobuf request. The second result is the
// wait before a retry: 0 for the backoff's, the server's Retry-After, or
// noRetry.
func (e *Exporter) sendHTTP(ctx context.Context, body []byte) (time.Duration, error) {
	data, err := e.payload(body)
	if err != nil {
		return noRetry, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(data))
	if err != nil {
		return noRetry, err
	}
	e.setHeaders(req.Header)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return noRetry, err // no collector there, or a broken connection: as the official exporters, no retry
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if resp.Header.Get("Content-Type") != "application/x-protobuf" {
			return 0, nil
		}
		return noRetry, partialSuccess(answer)
	}
	msg := strings.TrimSpace(string(answer))
	if msg == "" {
		msg = "(empty)"
	}
	err = fmt.Errorf("OTLP export to %s: %s: %s", e.cfg.URL, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, aerr := strconv.Atoi(resp.Header.Get("Retry-After")); aerr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return noRetry, err
}

// sendGRPC makes one unary call of TraceService/Export: a length-prefixed
// message (1 byte compressed flag, 4 bytes big-endian length), the answer
// likewise, and the call's status in the grpc-status trailer (or header,
// for an answer without a body).
func (e *Exporter) sendGRPC(ctx context.Context, body []byte) (time.Duration, error) {
	data, err := e.payload(body)
	if err != nil {
		return noRetry, err
	}
	frame := make([]byte, 5, 5+len(data))
	if e.cfg.Gzip {
		frame[0] = 1
	}
	binary.BigEndian.PutUint32(frame[1:], uint32(len(data)))
	frame = append(frame, data...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(frame))
	if err != nil {
		return noRetry, err
	}
	e.setHeaders(req.Header)
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	if e.cfg.Gzip {
		req.Header.Set("Grpc-Encoding", "gzip")
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", grpcTimeout(time.Until(dl)))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return noRetry, err // no collector there, or a broken connection: as the official exporters, no retry
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // to the trailers
	if resp.StatusCode != http.StatusOK {
		return retryHTTPStatus(resp.StatusCode), fmt.Errorf("OTLP/gRPC export to %s: HTTP %s", e.cfg.URL, resp.Status)
	}
	code, msg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if code == "" {
		return noRetry, fmt.Errorf("OTLP/gRPC export to %s: no grpc-status in the answer", e.cfg.URL)
	}
	if code != "0" {
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		err := fmt.Errorf("OTLP/gRPC export to %s: status %s: %s", e.cfg.URL, grpcCodeName(code), msg)
		switch code {
		case "1", "4", "10", "11", "14", "15": // CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS
			return 0, err
		}
		return noRetry, err
	}
	if len(answer) < 5 {
		return 0, nil
	}
	n := binary.BigEndian.Uint32(answer[1:5])
	if answer[0] != 0 || int(n) != len(answer)-5 {
		return 0, nil // compressed or cut at maxResponse: the export itself succeeded
	}
	return noRetry, partialSuccess(answer[5:])
}

// grpcTimeout writes d as gRPC's grpc-timeout header value: at most eight
// digits and a unit, rounded up so that a deadline is never shortened to
// nothing.
func grpcTimeout(d time.Duration) string {
	ms := max(1, (d+time.Millisecond-1)/time.Millisecond)
	if ms <= 99_999_999 {
		return strconv.FormatInt(int64(ms), 10) + "m"
	}
	return strconv.FormatInt(min(99_999_999, int64((d+time.Hour-1)/time.Hour)), 10) + "H"
}

func retryHTTPStatus(code int) time.Duration {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 0
	}
	return noRetry
}

func grpcCodeName(code string) string {
	names := map[string]string{
		"1": "CANCELLED", "2": "UNKNOWN", "3": "INVALID_ARGUMENT", "4": "DEADLINE_EXCEEDED",
		"5": "NOT_FOUND", "6": "ALREADY_EXISTS", "7": "PERMISSION_DENIED", "8": "RESOURCE_EXHAUSTED",
		"9": "FAILED_PRECONDITION", "10": "ABORTED", "11": "OUT_OF_RANGE", "12": "UNIMPLEMENTED",
		"13": "INTERNAL", "14": "UNAVAILABLE", "15": "DATA_LOSS", "16": "UNAUTHENTICATED",
	}
	if n, ok := names[code]; ok {
		return n
	}
	return code
}

func (e *Exporter) setHeaders(h http.Header) {
	for k, v := range e.cfg.Headers {
		h.Set(k, v)
	}
	h.Set("User-Agent", e.userAgent)
}

// PartialSuccessError is a collector's answer that it kept only some of
// the spans (ExportTraceServiceResponse.partial_success).
type PartialSuccessError struct {
	Rejected int64
	Message  string
}

func (e *PartialSuccessError) Error() string {
	return fmt.Sprintf("OTLP partial success: %d spans rejected: %s", e.Rejected, e.Message)
}

// partialSuccess reads ExportTraceServiceResponse.partial_success = 1
// (ExportTracePartialSuccess rejected_spans = 1, error_message = 2); nil
// when there is none or it is empty.
func partialSuccess(resp []byte) error {
	ps, ok := field(resp, 1, wireBytes)
	if !ok {
		return nil
	}
	var e PartialSuccessError
	if v, ok := field(ps, 1, wireVarint); ok {
		n, _ := readVarint(v)
		e.Rejected = int64(n)
	}
	if v, ok := field(ps, 2, wireBytes); ok {
		e.Message = string(v)
	}
	if e.Rejected == 0 && e.Message == "" {
		return nil
	}
	return &e
}

func readVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// field finds the last occurrence of field num with wire type wt in msg:
// the bytes of a length-delimited value, or the encoding of a varint.
func field(msg []byte, num, wt int) ([]byte, bool) {
	var found []byte
	ok := false
	for len(msg) > 0 {
		tag, n := readVarint(msg)
		if n < 0 {
			return nil, false
		}
		msg = msg[n:]
		var val []byte
		switch int(tag & 7) {
		case wireVarint:
			_, n = readVarint(msg)
			if n < 0 {
				return nil, false
			}
			val, msg = msg[:n], msg[n:]
		case wireFixed64:
			if len(msg) < 8 {
				return nil, false
			}
			val, msg = msg[:8], msg[8:]
		case wireFixed32:
			if len(msg) < 4 {
				return nil, false
			}
			val, msg = msg[:4], msg[4:]
		case wireBytes:
			l, n := readVarint(msg)
			if n < 0 || uint64(len(msg)-n) < l {
				return nil, false
			}
			val, msg = msg[n:n+int(l)], msg[n+int(l):]
		default:
			return nil, false
		}
		if int(tag>>3) == num && int(tag&7) == wt {
			found, ok = val, true
		}
	}
	return found, ok
}
