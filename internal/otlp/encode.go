package otlp

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The protobuf wire format (protobuf.dev/programming-guides/encoding) of
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest, written
// field by field. Field numbers are those of the OTLP .proto files
// (opentelemetry-proto v1); proto3 rules apply: a scalar field at its zero
// value is left out, a set message field or oneof member is always written.
// encode_test.go checks every field against the official generated types.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Span flags (opentelemetry.proto.trace.v1.SpanFlags).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, field, wire int) []byte {
	return appendVarint(b, uint64(field)<<3|uint64(wire))
}

// appendLen writes a length-delimited field holding data.
func appendLen(b []byte, field int, data []byte) []byte {
	b = appendTag(b, field, wireBytes)
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, field, wireBytes)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, field int, data []byte) []byte {
	if len(data) == 0 {
		return b
	}
	return appendLen(b, field, data)
}

func appendUint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarint(appendTag(b, field, wireVarint), v)
}

func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

func appendFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

// appendMessage writes a message field: the tag, then the message that
// enc appends, prefixed with its length. The message is encoded in place
// after a one-byte length and moved when its length needs more bytes.
func appendMessage(b []byte, field int, enc func([]byte) []byte) []byte {
	b = appendTag(b, field, wireBytes)
	at := len(b)
	b = append(b, 0)
	b = enc(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	var lenBuf [binary.MaxVarintLen64]byte
	l := appendVarint(lenBuf[:0], uint64(n))
	b = append(b, l[1:]...)             // room for the longer length
	copy(b[at+len(l):], b[at+1:at+1+n]) // move the message up
	copy(b[at:], l)
	return b
}

// EncodeRequest encodes spans as an ExportTraceServiceRequest, grouped by
// resource and then by instrumentation scope as the official OTLP exporter
// groups them.
func EncodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var order []*resGroup
	byRes := map[attribute.Distinct]*resGroup{}
	byScope := map[scopeKey]*scopeGroup{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		rg := byRes[rk]
		if rg == nil {
			rg = &resGroup{res: s.Resource()}
			byRes[rk] = rg
			order = append(order, rg)
		}
		sk := scopeKey{rk, s.InstrumentationScope()}
		sg := byScope[sk]
		if sg == nil {
			sg = &scopeGroup{scope: sk.scope}
			byScope[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	var b []byte
	for _, rg := range order {
		// ExportTraceServiceRequest.resource_spans = 1
		b = appendMessage(b, 1, func(b []byte) []byte {
			if rg.res != nil {
				// ResourceSpans.resource = 1; Resource.attributes = 1
				b = appendMessage(b, 1, func(b []byte) []byte {
					return appendKeyValues(b, 1, rg.res.Attributes())
				})
			}
			for _, sg := range rg.scopes {
				// ResourceSpans.scope_spans = 2
				b = appendMessage(b, 2, func(b []byte) []byte {
					return appendScopeSpans(b, sg.scope, sg.spans)
				})
			}
			if rg.res != nil {
				b = appendString(b, 3, rg.res.SchemaURL()) // ResourceSpans.schema_url
			}
			return b
		})
	}
	return b
}

func appendScopeSpans(b []byte, scope instrumentation.Scope, spans []sdktrace.ReadOnlySpan) []byte {
	if scope != (instrumentation.Scope{}) {
		// ScopeSpans.scope = 1: InstrumentationScope name = 1, version = 2,
		// attributes = 3
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendString(b, 1, scope.Name)
			b = appendString(b, 2, scope.Version)
			return appendKeyValues(b, 3, scope.Attributes.ToSlice())
		})
	}
	for _, s := range spans {
		b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) }) // ScopeSpans.spans = 2
	}
	return appendString(b, 3, scope.SchemaURL) // ScopeSpans.schema_url = 3
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])                    // trace_id
	b = appendBytes(b, 2, sid[:])                    // span_id
	b = appendString(b, 3, sc.TraceState().String()) // trace_state
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, 4, psid[:]) // parent_span_id
	}
	b = appendString(b, 5, s.Name())                            // name
	b = appendUint(b, 6, uint64(spanKind(s.SpanKind())))        // kind
	b = appendFixed64(b, 7, unixNano(s.StartTime().UnixNano())) // start_time_unix_nano
	b = appendFixed64(b, 8, unixNano(s.EndTime().UnixNano()))   // end_time_unix_nano
	b = appendKeyValues(b, 9, s.Attributes())                   // attributes
	b = appendUint(b, 10, count(s.DroppedAttributes()))         // dropped_attributes_count
	for _, e := range s.Events() {
		// events = 11: Event time_unix_nano = 1, name = 2, attributes = 3,
		// dropped_attributes_count = 4
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, unixNano(e.Time.UnixNano()))
			b = appendString(b, 2, e.Name)
			b = appendKeyValues(b, 3, e.Attributes)
			return appendUint(b, 4, count(e.DroppedAttributeCount))
		})
	}
	b = appendUint(b, 12, count(s.DroppedEvents())) // dropped_events_count
	for _, l := range s.Links() {
		// links = 13: Link trace_id = 1, span_id = 2, attributes = 4,
		// dropped_attributes_count = 5, flags = 6 (the official exporter
		// leaves the link's trace_state = 3 out; so does this one)
		b = appendMessage(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendKeyValues(b, 4, l.Attributes)
			b = appendUint(b, 5, count(l.DroppedAttributeCount))
			return appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendUint(b, 14, count(s.DroppedLinks())) // dropped_links_count
	st := s.Status()
	// status = 15: Status message = 2, code = 3
	b = appendMessage(b, 15, func(b []byte) []byte {
		b = appendString(b, 2, st.Description)
		return appendUint(b, 3, uint64(statusCode(st.Code)))
	})
	return appendFixed32(b, 16, spanFlags(sc.TraceFlags(), parent)) // flags
}

// appendKeyValues writes each attribute as a KeyValue (key = 1,
// value = 2) in field.
func appendKeyValues(b []byte, field int, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, field, func(b []byte) []byte {
			b = appendString(b, 1, string(kv.Key))
			return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
		})
	}
	return b
}

// appendAnyValue writes the fields of an AnyValue: a oneof of
// string_value = 1, bool_value = 2, int_value = 3, double_value = 4,
// array_value = 5 (ArrayValue.values = 1), kvlist_value = 6
// (KeyValueList.values = 1), bytes_value = 7. A oneof member is written
// even at its zero value.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return appendBool(b, v.AsBool())
	case attribute.INT64:
		return appendInt(b, v.AsInt64())
	case attribute.FLOAT64:
		return appendDouble(b, v.AsFloat64())
	case attribute.STRING:
		return appendStringValue(b, v.AsString())
	case attribute.BYTESLICE:
		return appendLen(b, 7, v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), appendBool)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), appendInt)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), appendDouble)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), appendStringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), appendAnyValue)
	case attribute.MAP:
		return appendMessage(b, 6, func(b []byte) []byte { return appendKeyValues(b, 1, v.AsMap()) })
	case attribute.EMPTY:
		return b
	default:
		return appendStringValue(b, "INVALID")
	}
}

func appendStringValue(b []byte, s string) []byte {
	b = appendTag(b, 1, wireBytes)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	b = appendTag(b, 2, wireVarint)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendInt(b []byte, v int64) []byte {
	return appendVarint(appendTag(b, 3, wireVarint), uint64(v))
}

func appendDouble(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, 4, wireFixed64), math.Float64bits(v))
}

func appendArray[T any](b []byte, vals []T, enc func([]byte, T) []byte) []byte {
	return appendMessage(b, 5, func(b []byte) []byte {
		for _, v := range vals {
			b = appendMessage(b, 1, func(b []byte) []byte { return enc(b, v) })
		}
		return b
	})
}

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// spanKind maps the API's kinds to Span.SpanKind (INTERNAL 1, SERVER 2,
// CLIENT 3, PRODUCER 4, CONSUMER 5).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// statusCode maps the API's codes to Status.StatusCode (UNSET 0, OK 1,
// ERROR 2).
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func count(n int) uint64 { return uint64(min(max(0, n), math.MaxUint32)) }
