//go:build !wiggum_nootel

package telemetry

import (
	"context"
	"os"

	"github.com/wiggum-dev/wiggum/internal/otlp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The SDK is linked into every wiggum process, hooks included, and its
// package inits run at every start; the OTLP exporter is wiggum's own
// (internal/otlp: no gRPC or protobuf runtime). Building with -tags
// wiggum_nootel leaves the SDK out too (see export_nootel.go).

// FromEnv sets up OTLP export as the standard variables say (endpoint,
// protocol, headers, timeout, service name), or returns nil when they do
// not ask for it. onError receives export errors (never called from the
// loop's goroutines' critical path: the batch exporter runs apart).
func FromEnv(ctx context.Context, version string, onError func(error)) (*Tracer, error) {
	if !Configured() {
		return nil, nil
	}
	cfg, err := otlp.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	exp := otlp.New(cfg, version)
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
