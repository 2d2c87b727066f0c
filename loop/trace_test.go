package loop

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wiggum-dev/wiggum/internal/telemetry"
)

// A serial run's trace: one run span; a story span per story holding its
// attempts, each with its agent process; the failed attempt's rollback
// under it; outcomes and the story's cost over its attempts.
func TestSerialRunTrace(t *testing.T) {
	st, p := newRepo(t, 2)
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	var out bytes.Buffer
	o := opts(p, `cat >/dev/null
echo '{"type":"result","subtype":"success","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":2}}'
echo x > "f-$WIGGUM_STORY"
if [ "$WIGGUM_STORY" = US-1 ] && [ ! -e ../failed-once ]; then touch ../failed-once; exit 3; fi`)
	o.Out, o.Tracer = &out, tr
	if _, err := Run(context.Background(), st, o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// The syncer exported each span as it ended; shutting down clears
	// the in-memory exporter, so it comes after.
	spans := exp.GetSpans()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	get := func(s tracetest.SpanStub, key string) string {
		for _, kv := range s.Attributes {
			if string(kv.Key) == key {
				return kv.Value.String()
			}
		}
		return ""
	}
	label := func(s tracetest.SpanStub) string {
		if id := get(s, telemetry.AttrStory); id != "" {
			return s.Name + "(" + id + ")"
		}
		return s.Name
	}
	var tree []string
	for _, s := range spans {
		line := label(s)
		if p, ok := byID[s.Parent.SpanID().String()]; ok {
			line = label(p) + " > " + line
		}
		tree = append(tree, strings.TrimSpace(line+" "+get(s, telemetry.AttrOutcome)))
	}
	sort.Strings(tree)
	want := []string{
		"wiggum.attempt(US-1) > wiggum.agent",
		"wiggum.attempt(US-1) > wiggum.agent",
		"wiggum.attempt(US-1) > wiggum.rollback(US-1)",
		"wiggum.attempt(US-2) > wiggum.agent",
		"wiggum.run done",
		"wiggum.run > wiggum.story(US-1) done",
		"wiggum.run > wiggum.story(US-2) done",
		"wiggum.story(US-1) > wiggum.attempt(US-1) done",
		"wiggum.story(US-1) > wiggum.attempt(US-1) failed (agent)",
		"wiggum.story(US-2) > wiggum.attempt(US-2) done",
	}
	sort.Strings(want)
	if strings.Join(tree, "\n") != strings.Join(want, "\n") {
		t.Errorf("span tree:\n%s\nwant:\n%s", strings.Join(tree, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range spans {
		if s.Name == telemetry.SpanStory && get(s, telemetry.AttrStory) == "US-1" {
			if got := get(s, telemetry.AttrCost); got != "1" {
				t.Errorf("US-1's cost over its two attempts = %s, want 1", got)
			}
		}
		if s.Name == telemetry.SpanRun && get(s, "wiggum.completed") != attribute.IntValue(2).String() {
			t.Errorf("run span: completed = %s", get(s, "wiggum.completed"))
		}
	}
}
