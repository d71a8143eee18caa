package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes OTLP's protobuf messages (opentelemetry/proto/trace/v1
// and common/v1) straight from the SDK's finished spans into one reused
// buffer, field by field, where the OTLP exporter builds a tree of
// generated messages per span (three allocations per attribute) and then
// marshals it. The bytes are the same messages; TestEncode_AsTheExporter
// holds them to what the exporter's own transform makes.

// The field numbers of the messages written here.
const (
	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3

	fResourceAttributes protowire.Number = 1
	fResourceDropped    protowire.Number = 2

	fScopeSpansScope     protowire.Number = 1
	fScopeSpansSpans     protowire.Number = 2
	fScopeSpansSchemaURL protowire.Number = 3

	fScopeName       protowire.Number = 1
	fScopeVersion    protowire.Number = 2
	fScopeAttributes protowire.Number = 3

	fSpanTraceID       protowire.Number = 1
	fSpanSpanID        protowire.Number = 2
	fSpanTraceState    protowire.Number = 3
	fSpanParentSpanID  protowire.Number = 4
	fSpanName          protowire.Number = 5
	fSpanKind          protowire.Number = 6
	fSpanStart         protowire.Number = 7
	fSpanEnd           protowire.Number = 8
	fSpanAttributes    protowire.Number = 9
	fSpanDroppedAttrs  protowire.Number = 10
	fSpanEvents        protowire.Number = 11
	fSpanDroppedEvents protowire.Number = 12
	fSpanLinks         protowire.Number = 13
	fSpanDroppedLinks  protowire.Number = 14
	fSpanStatus        protowire.Number = 15
	fSpanFlags         protowire.Number = 16

	fEventTime       protowire.Number = 1
	fEventName       protowire.Number = 2
	fEventAttributes protowire.Number = 3
	fEventDropped    protowire.Number = 4

	fLinkTraceID    protowire.Number = 1
	fLinkSpanID     protowire.Number = 2
	fLinkAttributes protowire.Number = 4
	fLinkDropped    protowire.Number = 5
	fLinkFlags      protowire.Number = 6

	fStatusMessage protowire.Number = 2
	fStatusCode    protowire.Number = 3

	fKeyValueKey   protowire.Number = 1
	fKeyValueValue protowire.Number = 2

	fAnyString protowire.Number = 1
	fAnyBool   protowire.Number = 2
	fAnyInt    protowire.Number = 3
	fAnyDouble protowire.Number = 4
	fAnyArray  protowire.Number = 5
	fAnyKVList protowire.Number = 6
	fAnyBytes  protowire.Number = 7

	fListValues protowire.Number = 1 // ArrayValue.values, KeyValueList.values
)

// The span flags' bits beside the W3C trace flags (SpanFlags in OTLP).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// The status codes (Status.StatusCode in OTLP).
const (
	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

// open starts a length-delimited field at the end of b; closeField
// finishes it once its content is appended.
func open(b []byte) ([]byte, int) { return b, len(b) }

// closeField puts field num's tag and the length of what was appended
// since start in front of it.
func closeField(b []byte, start int, num protowire.Number) []byte {
	n := len(b) - start
	var hdr [2 * binary.MaxVarintLen64]byte // a tag and a length
	h := protowire.AppendVarint(protowire.AppendTag(hdr[:0], num, protowire.BytesType), uint64(n))
	b = append(b, h...)
	copy(b[start+len(h):], b[start:start+n])
	copy(b[start:], h)
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendUint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

// count is a dropped count as OTLP's uint32.
func count(n int) uint64 { return uint64(min(max(n, 0), math.MaxUint32)) }

// unixNano is t in OTLP's unsigned nanoseconds, 0 before 1970.
func unixNano(t interface{ UnixNano() int64 }) uint64 { return uint64(max(t.UnixNano(), 0)) }

// appendResourceSpans appends one ResourceSpans' fields (not wrapped: the
// caller's message is the ResourceSpans) holding spans, which all have res
// as their resource, grouped by their instrumentation scope in order of
// first appearance.
func appendResourceSpans(b []byte, res *resource.Resource, spans []sdktrace.ReadOnlySpan, scopes []instrumentation.Scope) []byte {
	if res != nil {
		var at int
		b, at = open(b)
		for it := res.Iter(); it.Next(); {
			b = appendKeyValue(b, fResourceAttributes, it.Attribute())
		}
		b = closeField(b, at, fResourceSpansResource)
	}
	for _, sc := range scopes {
		var at int
		b, at = open(b)
		var sat int
		b, sat = open(b)
		b = appendString(b, fScopeName, sc.Name)
		b = appendString(b, fScopeVersion, sc.Version)
		for it := sc.Attributes.Iter(); it.Next(); {
			b = appendKeyValue(b, fScopeAttributes, it.Attribute())
		}
		b = closeField(b, sat, fScopeSpansScope)
		for _, s := range spans {
			if s.InstrumentationScope() == sc {
				b = appendSpan(b, s)
			}
		}
		b = appendString(b, fScopeSpansSchemaURL, sc.SchemaURL)
		b = closeField(b, at, fResourceSpansScopeSpans)
	}
	if res != nil {
		b = appendString(b, fResourceSpansSchemaURL, res.SchemaURL())
	}
	return b
}

// appendSpan appends s as ScopeSpans' field spans.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	var at int
	b, at = open(b)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, fSpanTraceID, tid[:])
	b = appendBytes(b, fSpanSpanID, sid[:])
	b = appendString(b, fSpanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, fSpanParentSpanID, psid[:])
	}
	b = appendString(b, fSpanName, s.Name())
	b = appendUint(b, fSpanKind, spanKind(s.SpanKind()))
	b = appendFixed64(b, fSpanStart, unixNano(s.StartTime()))
	b = appendFixed64(b, fSpanEnd, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, fSpanAttributes, kv)
	}
	b = appendUint(b, fSpanDroppedAttrs, count(s.DroppedAttributes()))
	for _, e := range s.Events() {
		var et int
		b, et = open(b)
		b = appendFixed64(b, fEventTime, unixNano(e.Time))
		b = appendString(b, fEventName, e.Name)
		for _, kv := range e.Attributes {
			b = appendKeyValue(b, fEventAttributes, kv)
		}
		b = appendUint(b, fEventDropped, count(e.DroppedAttributeCount))
		b = closeField(b, et, fSpanEvents)
	}
	b = appendUint(b, fSpanDroppedEvents, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		var lt int
		b, lt = open(b)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, fLinkTraceID, ltid[:])
		b = appendBytes(b, fLinkSpanID, lsid[:])
		// No trace_state: the exporter's transform writes none for a link.
		for _, kv := range l.Attributes {
			b = appendKeyValue(b, fLinkAttributes, kv)
		}
		b = appendUint(b, fLinkDropped, count(l.DroppedAttributeCount))
		b = appendFixed32(b, fLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = closeField(b, lt, fSpanLinks)
	}
	b = appendUint(b, fSpanDroppedLinks, count(s.DroppedLinks()))
	var st int
	b, st = open(b)
	status := s.Status()
	b = appendString(b, fStatusMessage, status.Description)
	b = appendUint(b, fStatusCode, statusCode(status.Code))
	b = closeField(b, st, fSpanStatus)
	b = appendFixed32(b, fSpanFlags, spanFlags(sc.TraceFlags(), parent))
	return closeField(b, at, fScopeSpansSpans)
}

// spanFlags are the W3C flags, and whether the parent is remote (which
// OTLP says is known).
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

func spanKind(k trace.SpanKind) uint64 {
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

func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusOK
	case codes.Error:
		return statusError
	}
	return statusUnset
}

// appendKeyValue appends kv as field num, a KeyValue.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	var at int
	b, at = open(b)
	b = appendString(b, fKeyValueKey, string(kv.Key))
	b = appendValue(b, fKeyValueValue, kv.Value)
	return closeField(b, at, num)
}

// appendValue appends v as field num, an AnyValue; its one field is
// written even when it is the zero value, as a oneof's is.
func appendValue(b []byte, num protowire.Number, v attribute.Value) []byte {
	var at int
	b, at = open(b)
	switch v.Type() {
	case attribute.BOOL:
		var x uint64
		if v.AsBool() {
			x = 1
		}
		b = protowire.AppendVarint(protowire.AppendTag(b, fAnyBool, protowire.VarintType), x)
	case attribute.INT64:
		b = protowire.AppendVarint(protowire.AppendTag(b, fAnyInt, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendFixed64(protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendString(protowire.AppendTag(b, fAnyString, protowire.BytesType), v.AsString())
	case attribute.BYTESLICE:
		b = appendBytes(b, fAnyBytes, v.AsByteSlice())
	case attribute.BOOLSLICE:
		b = appendList(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		b = appendList(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		b = appendList(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		b = appendList(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		b = appendList(b, v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		var lt int
		b, lt = open(b)
		for _, kv := range v.AsMap() {
			b = appendKeyValue(b, fListValues, kv)
		}
		b = closeField(b, lt, fAnyKVList)
	case attribute.EMPTY:
	default:
		b = protowire.AppendString(protowire.AppendTag(b, fAnyString, protowire.BytesType), "INVALID")
	}
	return closeField(b, at, num)
}

// appendList appends xs as an AnyValue's array (ArrayValue), each element
// made a value by val.
func appendList[T any](b []byte, xs []T, val func(T) attribute.Value) []byte {
	b, lt := open(b)
	for _, x := range xs {
		b = appendValue(b, fListValues, val(x))
	}
	return closeField(b, lt, fAnyArray)
}
