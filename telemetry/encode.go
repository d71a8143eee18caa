package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes OTLP's protobuf messages (opentelemetry/proto/trace/v1
// and common/v1) straight from the finished spans into one reused buffer,
// field by field, where OpenTelemetry's exporter builds a tree of
// generated messages per span (three allocations per attribute) and then
// marshals it. The bytes are the same messages; TestEncode_AsTheExporter
// holds them to what that exporter makes of the same spans.

// The field numbers of the messages written here.
const (
	fResourceSpansResource   protowire.Number = 1
	fResourceSpansScopeSpans protowire.Number = 2
	fResourceSpansSchemaURL  protowire.Number = 3

	fResourceAttributes protowire.Number = 1

	fScopeSpansScope protowire.Number = 1
	fScopeSpansSpans protowire.Number = 2

	fScopeName protowire.Number = 1

	fSpanTraceID      protowire.Number = 1
	fSpanSpanID       protowire.Number = 2
	fSpanTraceState   protowire.Number = 3
	fSpanParentSpanID protowire.Number = 4
	fSpanName         protowire.Number = 5
	fSpanKind         protowire.Number = 6
	fSpanStart        protowire.Number = 7
	fSpanEnd          protowire.Number = 8
	fSpanAttributes   protowire.Number = 9
	fSpanDroppedAttrs protowire.Number = 10
	fSpanStatus       protowire.Number = 15
	fSpanFlags        protowire.Number = 16

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

// statusError is a failed span's Status.StatusCode in OTLP.
const statusError = 2

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

// count is a dropped count as OTLP's uint32.
func count(n int) uint64 { return uint64(min(max(n, 0), math.MaxUint32)) }

// appendResource writes res as a ResourceSpans' resource field, and its
// schema URL: the part of every batch's message that never changes.
func appendResource(b []byte, res *resource.Resource) []byte {
	if res == nil {
		return b
	}
	var at int
	b, at = open(b)
	for it := res.Iter(); it.Next(); {
		b = appendKeyValue(b, fResourceAttributes, it.Attribute())
	}
	b = closeField(b, at, fResourceSpansResource)
	return appendString(b, fResourceSpansSchemaURL, res.SchemaURL())
}

// headRoom is the room a batch keeps before its spans for what wraps
// them in one ResourceSpans (putHead): res, from appendResource, and the
// ScopeSpans' tag, length and scope, at their longest.
func headRoom(res []byte) int {
	return len(res) + 2*(protowire.SizeTag(fResourceSpansScopeSpans)+binary.MaxVarintLen64) +
		sizeString(fScopeName, ScopeName)
}

// putHead writes, in the room b[:at] (headRoom(res) long at least), what
// makes the spans b[at:] (the gateway's spans, as ScopeSpans' field spans:
// appendSpan) one ResourceSpans' fields: res, then the ScopeSpans that
// holds them, with its scope. head is scratch space, returned for reuse;
// the message is b[start:].
func putHead(b []byte, at int, res, head []byte) (start int, scratch []byte) {
	scope := sizeString(fScopeName, ScopeName)
	head = append(head[:0], res...)
	head = protowire.AppendTag(head, fResourceSpansScopeSpans, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(sizeBytes(fScopeSpansScope, scope)+len(b)-at))
	head = protowire.AppendTag(head, fScopeSpansScope, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(scope))
	head = appendString(head, fScopeName, ScopeName)
	return at - copy(b[at-len(head):at], head), head
}

// appendSpan appends s, ended, as ScopeSpans' field spans. Its length
// and its attributes' are computed first (spanSize): the bytes are
// written once, not moved to make room for a length (closeField).
func appendSpan(b []byte, s *record) []byte {
	b = protowire.AppendTag(b, fScopeSpansSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(spanSize(s)))
	b = appendBytes(b, fSpanTraceID, s.id.trace[:])
	b = appendBytes(b, fSpanSpanID, s.id.span[:])
	b = appendString(b, fSpanTraceState, s.id.state)
	if s.parent != ([8]byte{}) {
		b = appendBytes(b, fSpanParentSpanID, s.parent[:])
	}
	b = appendString(b, fSpanName, s.name)
	b = appendUint(b, fSpanKind, uint64(s.kind))
	b = appendFixed64(b, fSpanStart, spanStart(s))
	b = appendFixed64(b, fSpanEnd, uint64(max(s.end, 0)))
	for _, a := range s.attrs[:s.n] {
		b = appendAttr(b, a)
	}
	for _, a := range s.more {
		b = appendAttr(b, a)
	}
	b = appendUint(b, fSpanDroppedAttrs, count(s.dropped))
	b = protowire.AppendTag(b, fSpanStatus, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(statusSize(s)))
	if s.failed {
		b = appendString(b, fStatusMessage, s.desc)
		b = appendUint(b, fStatusCode, statusError)
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type), spanFlags(s))
}

func spanStart(s *record) uint64 { return uint64(max(s.start.UnixNano(), 0)) }

// spanFlags are the W3C flags, and whether the parent is remote (which
// OTLP says is known).
func spanFlags(s *record) uint32 {
	f := uint32(s.traceFlag) | flagHasIsRemote
	if s.remote {
		f |= flagIsRemote
	}
	return f
}

// spanSize is the length of what appendSpan writes after the length.
func spanSize(s *record) int {
	n := sizeBytes(fSpanTraceID, len(s.id.trace)) + sizeBytes(fSpanSpanID, len(s.id.span)) + sizeString(fSpanTraceState, s.id.state)
	if s.parent != ([8]byte{}) {
		n += sizeBytes(fSpanParentSpanID, len(s.parent))
	}
	n += sizeString(fSpanName, s.name) + sizeUint(fSpanKind, uint64(s.kind)) +
		sizeFixed64(fSpanStart, spanStart(s)) + sizeFixed64(fSpanEnd, uint64(max(s.end, 0)))
	for _, a := range s.attrs[:s.n] {
		n += sizeBytes(fSpanAttributes, attrSize(a))
	}
	for _, a := range s.more {
		n += sizeBytes(fSpanAttributes, attrSize(a))
	}
	n += sizeUint(fSpanDroppedAttrs, count(s.dropped)) + sizeBytes(fSpanStatus, statusSize(s))
	return n + protowire.SizeTag(fSpanFlags) + protowire.SizeFixed32()
}

func statusSize(s *record) int {
	if !s.failed {
		return 0
	}
	return sizeString(fStatusMessage, s.desc) + sizeUint(fStatusCode, statusError)
}

// appendAttr appends a as a span's attribute (a KeyValue).
func appendAttr(b []byte, a Attr) []byte {
	b = protowire.AppendTag(b, fSpanAttributes, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(attrSize(a)))
	b = appendString(b, fKeyValueKey, keyNames[a.key])
	b = protowire.AppendTag(b, fKeyValueValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(valueSize(a)))
	switch a.kind {
	case valueInt:
		return protowire.AppendVarint(protowire.AppendTag(b, fAnyInt, protowire.VarintType), a.x)
	case valueFloat:
		return protowire.AppendFixed64(protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type), a.x)
	}
	// A string's one field is written even when it is "", as a oneof's is.
	return protowire.AppendString(protowire.AppendTag(b, fAnyString, protowire.BytesType), a.s)
}

// attrSize is the length of a KeyValue holding a.
func attrSize(a Attr) int {
	return sizeString(fKeyValueKey, keyNames[a.key]) + sizeBytes(fKeyValueValue, valueSize(a))
}

// valueSize is the length of an AnyValue holding a's value.
func valueSize(a Attr) int {
	switch a.kind {
	case valueInt:
		return protowire.SizeTag(fAnyInt) + protowire.SizeVarint(a.x)
	case valueFloat:
		return protowire.SizeTag(fAnyDouble) + protowire.SizeFixed64()
	}
	return sizeBytes(fAnyString, len(a.s))
}

// The sizes of what appendBytes, appendString, appendUint and
// appendFixed64 write.
func sizeBytes(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

func sizeString(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return sizeBytes(num, len(s))
}

func sizeUint(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

func sizeFixed64(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeFixed64()
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
