package otlp

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// allAttributes holds one attribute of every type the SDK has, zero values
// included (a oneof member at its zero value is still set).
func allAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("s", "text"),
		attribute.String("s0", ""),
		attribute.Bool("b", true),
		attribute.Bool("b0", false),
		attribute.Int64("i", -42),
		attribute.Int64("i0", 0),
		attribute.Int64("imax", math.MaxInt64),
		attribute.Float64("f", 0.25),
		attribute.Float64("f0", 0),
		attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -1, 300}),
		attribute.Float64Slice("fs", []float64{1.5, -2}),
		attribute.StringSlice("ss", []string{"a", "", "c"}),
		attribute.StringSlice("ss0", nil),
		{Key: "bytes", Value: attribute.ByteSliceValue([]byte{0, 1, 2})},
		{Key: "slice", Value: attribute.SliceValue(attribute.IntValue(1), attribute.StringValue("x"))},
		{Key: "map", Value: attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 2))},
		{Key: "empty"},
		attribute.String("long", string(make([]byte, 300))), // a length of two varint bytes
	}
}

func testSpans() []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, _ := trace.ParseTraceState("vendor=value,other=x")
	res1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "wiggum"), attribute.Int("pid", 7))
	res2 := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope1 := instrumentation.Scope{Name: "github.com/wiggum-dev/wiggum"}
	scope2 := instrumentation.Scope{Name: "lib", Version: "v1.2.3", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.Bool("x", true))}
	start := time.Unix(1_700_000_000, 123456789)
	sc := func(span byte, remote bool, flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{span, 1, 2, 3, 4, 5, 6, 7}, TraceFlags: flags, TraceState: ts, Remote: remote})
	}
	stubs := tracetest.SpanStubs{
		{
			Name: "wiggum.run", SpanContext: sc(1, false, trace.FlagsSampled), StartTime: start, EndTime: start.Add(time.Second),
			SpanKind: trace.SpanKindInternal, Attributes: allAttributes(), Resource: res1, InstrumentationScope: scope1,
			Status: sdktrace.Status{Code: codes.Ok},
		},
		{
			Name: "wiggum.story", SpanContext: sc(2, false, trace.FlagsSampled), Parent: sc(1, false, trace.FlagsSampled),
			StartTime: start.Add(time.Millisecond), EndTime: start.Add(2 * time.Millisecond),
			SpanKind: trace.SpanKindClient, Resource: res1, InstrumentationScope: scope1,
			Status: sdktrace.Status{Code: codes.Error, Description: "failed (gate)"},
			Events: []sdktrace.Event{
				{Name: "retry", Time: start.Add(time.Microsecond), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 2},
				{Name: "bare"},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(9, true, 0), Attributes: []attribute.KeyValue{attribute.String("why", "follows")}, DroppedAttributeCount: 1},
				{SpanContext: sc(8, false, trace.FlagsSampled)},
			},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5, ChildSpanCount: 1,
		},
		{
			Name: "remote child", SpanContext: sc(3, false, trace.FlagsSampled), Parent: sc(7, true, trace.FlagsSampled),
			StartTime: start, EndTime: start, SpanKind: trace.SpanKindServer, Resource: res1, InstrumentationScope: scope2,
		},
		{Name: "producer", SpanContext: sc(4, false, 0), SpanKind: trace.SpanKindProducer, Resource: res2, InstrumentationScope: scope2, StartTime: start, EndTime: start},
		{Name: "consumer", SpanContext: sc(5, false, 0), SpanKind: trace.SpanKindConsumer, Resource: res2, StartTime: time.Unix(0, 0), EndTime: time.Time{}},
		{Name: "", SpanContext: sc(6, false, 0), Resource: res1, InstrumentationScope: scope1},
	}
	return stubs.Snapshots()
}

// officialRequest is what the official OTLP/HTTP exporter sends for spans.
func officialRequest(t *testing.T, spans []sdktrace.ReadOnlySpan) []byte {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	_ = exp.Shutdown(context.Background())
	if body == nil {
		t.Fatal("the official exporter sent nothing")
	}
	return body
}

func decode(t *testing.T, data []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		t.Fatalf("the official OTLP types cannot decode the request: %v", err)
	}
	// The official exporter orders resources by map iteration: compare in
	// a fixed order.
	sort.Slice(req.ResourceSpans, func(i, j int) bool {
		return req.ResourceSpans[i].String() < req.ResourceSpans[j].String()
	})
	return &req
}

// TestEncodeMatchesOfficialExporter: the request EncodeRequest writes for
// spans of every shape (every attribute type, events, links, remote
// parents, statuses, kinds, trace state, dropped counts, two resources and
// two scopes) decodes, with the official generated OTLP types, to exactly
// what the official exporter sends for the same spans.
func TestEncodeMatchesOfficialExporter(t *testing.T) {
	spans := testSpans()
	ours := decode(t, EncodeRequest(spans))
	official := decode(t, officialRequest(t, spans))
	if !proto.Equal(ours, official) {
		t.Errorf("request differs from the official exporter's\nours:     %v\nofficial: %v", ours, official)
	}
	if n := len(ours.ResourceSpans); n != 2 {
		t.Errorf("%d resource spans, want 2", n)
	}
	// And the bytes are canonical: re-marshalled deterministically by the
	// official runtime they are the same length (field order aside).
	again, err := proto.MarshalOptions{Deterministic: true}.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(EncodeRequest(spans)) {
		t.Errorf("encoded %d bytes, the official runtime %d for the same message", len(EncodeRequest(spans)), len(again))
	}
}

// TestAppendMessageLongLengths: a nested message longer than 127 bytes
// (and than 16 KiB) has its length prefix widened without losing a byte.
func TestAppendMessageLongLengths(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1 << 21} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i)
		}
		got := appendMessage([]byte{0xAA}, 3, func(b []byte) []byte { return append(b, payload...) })
		want := appendLen([]byte{0xAA}, 3, payload)
		if string(got) != string(want) {
			t.Errorf("length %d: appendMessage and appendLen differ", n)
		}
	}
}
