// Package telemetry exports a run as one OpenTelemetry trace when the
// standard OTEL_EXPORTER_OTLP_* variables ask for it. Without them nothing
// is set up - no SDK, no exporter, no goroutine - and every span is a nil
// *Span whose methods do nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/wiggum-dev/wiggum/internal/redact"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL that wiggum exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// ConfigError is an OTEL_* variable wiggum cannot honour.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return "telemetry: " + e.Msg }

// Configured reports whether the environment asks for traces: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER
// turns them off.
func Configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := os.Getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Tracer makes a run's spans. A nil *Tracer makes nil spans.
type Tracer struct {
	tr       trace.Tracer
	shutdown func(context.Context) error
}

// Shutdown exports what is left and stops, giving up when ctx ends: the
// caller bounds the wait, so a slow or hanging collector costs at most
// that, once.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.shutdown(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("telemetry: spans not exported in time; the collector did not answer")
	case errors.Is(err, context.Canceled):
		return errors.New("telemetry: spans not all exported: interrupted")
	}
	return err
}

// Start begins a root span: the run's.
func (t *Tracer) Start(name string, attrs Attrs) *Span {
	if t == nil {
		return nil
	}
	ctx, s := t.tr.Start(context.Background(), name, trace.WithAttributes(attrs.kv()...))
	return &Span{tr: t, ctx: ctx, s: s}
}

// Attrs are span attributes: string, bool, int, int64, float64 or
// []string values.
type Attrs map[string]any

func (a Attrs) kv() []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(a))
	for k, v := range a {
		switch v := v.(type) {
		case string:
			out = append(out, attribute.String(k, redact.Text(v)))
		case bool:
			out = append(out, attribute.Bool(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		case int64:
			out = append(out, attribute.Int64(k, v))
		case float64:
			out = append(out, attribute.Float64(k, v))
		case []string:
			out = append(out, attribute.StringSlice(k, redact.Strings(v)))
		default:
			out = append(out, attribute.String(k, fmt.Sprint(v)))
		}
	}
	return out
}

// Span is one timed step of a run. A nil *Span does nothing, so the loop
// calls it unconditionally. It is safe for concurrent use.
type Span struct {
	tr  *Tracer
	ctx context.Context
	s   trace.Span

	mu   sync.Mutex
	sums map[string]float64 // added up over children, set at End
}

// Start begins a child span.
func (s *Span) Start(name string, attrs Attrs) *Span {
	if s == nil {
		return nil
	}
	ctx, c := s.tr.tr.Start(s.ctx, name, trace.WithAttributes(attrs.kv()...))
	return &Span{tr: s.tr, ctx: ctx, s: c}
}

// Set sets attributes now.
func (s *Span) Set(attrs Attrs) {
	if s == nil {
		return
	}
	s.s.SetAttributes(attrs.kv()...)
}

// Add adds v to the numeric attribute key, recorded when the span ends
// (a story's cost over its attempts, say).
func (s *Span) Add(key string, v float64) {
	if s == nil || v == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sums == nil {
		s.sums = map[string]float64{}
	}
	s.sums[key] += v
}

// End ends the span with attrs; failure, when not "", marks it an error
// with that description.
func (s *Span) End(attrs Attrs, failure string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	for k, v := range s.sums {
		s.s.SetAttributes(attribute.Float64(k, v))
	}
	s.mu.Unlock()
	s.s.SetAttributes(attrs.kv()...)
	if failure != "" {
		s.s.SetStatus(codes.Error, redact.Text(failure))
	}
	s.s.End()
}

// Span names and attribute keys of a run's trace. Token counts use the
// OpenTelemetry GenAI conventions' names.
const (
	SpanRun      = "wiggum.run"
	SpanStory    = "wiggum.story"
	SpanAttempt  = "wiggum.attempt"
	SpanAgent    = "wiggum.agent"
	SpanGate     = "wiggum.gate"
	SpanRollback = "wiggum.rollback"
	SpanMerge    = "wiggum.merge"

	AttrStory        = "wiggum.story.id"
	AttrOutcome      = "wiggum.outcome"
	AttrAttempt      = "wiggum.attempt"
	AttrIteration    = "wiggum.iteration"
	AttrWorker       = "wiggum.worker"
	AttrCost         = "wiggum.cost_usd"
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
)
