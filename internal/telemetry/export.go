//go:build !wiggum_nootel

package telemetry

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The SDK and the OTLP exporters (with gRPC and protobuf) are linked into
// every wiggum process, hooks included, and their package inits run at
// every start: building with -tags wiggum_nootel leaves them out (see
// export_nootel.go and bench/README.md for what that saves).

// FromEnv sets up OTLP export as the standard variables say (endpoint,
// protocol, headers, timeout, service name), or returns nil when they do
// not ask for it. onError receives export errors (never called from the
// loop's goroutines' critical path: the batch exporter runs apart).
func FromEnv(ctx context.Context, version string, onError func(error)) (*Tracer, error) {
	if !Configured() {
		return nil, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch proto {
	case "", ProtocolHTTP:
		exp, err = otlptracehttp.New(ctx)
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, &ConfigError{Msg: fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported; use %s or %s", proto, ProtocolHTTP, ProtocolGRPC)}
	}
	if err != nil {
		return nil, &ConfigError{Msg: "OTLP exporter: " + err.Error()}
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName()), attribute.String("service.version", version)))
	if err != nil && res == nil {
		return nil, &ConfigError{Msg: "resource: " + err.Error()}
	}
	if onError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(onError))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{tr: tp.Tracer("github.com/wiggum-dev/wiggum"), shutdown: tp.Shutdown}, nil
}

func serviceName() string {
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "wiggum"
}

// New makes a Tracer over a provider the caller set up (tests use an
// in-memory exporter); Shutdown shuts the provider down.
func New(tp *sdktrace.TracerProvider) *Tracer {
	return &Tracer{tr: tp.Tracer("github.com/wiggum-dev/wiggum"), shutdown: tp.Shutdown}
}
