//go:build wiggum_nootel

package telemetry

import "context"

// FromEnv, in a wiggum built with -tags wiggum_nootel (no OpenTelemetry SDK
// linked, for the leanest hook start), refuses a configured export rather
// than silently dropping it, and is nil otherwise.
func FromEnv(_ context.Context, _ string, _ func(error)) (*Tracer, error) {
	if !Configured() {
		return nil, nil
	}
	return nil, &ConfigError{Msg: "this wiggum was built without OpenTelemetry (-tags wiggum_nootel); unset OTEL_EXPORTER_OTLP_ENDPOINT or use a default build"}
}
