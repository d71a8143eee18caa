// Package otlptest is an OTLP/HTTP trace receiver for tests, like
// net/http/httptest: it listens on 127.0.0.1, decodes what an exporter
// posts to /v1/traces (protobuf or JSON, gzip or not), keeps every span and
// every raw body, and answers as a collector does.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in hex.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      string
	Start, End                time.Time
	Attrs                     map[string]string // every value as text
	Events                    []Event
	Failed                    bool   // status code ERROR
	Status                    string // the status message
	Service                   string // the resource's service.name
}

// Event is one span event.
type Event struct {
	Name  string
	Attrs map[string]string
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base URL to configure as the OTLP endpoint
	// (http://127.0.0.1:port); spans are posted to URL/v1/traces.
	URL string

	srv    *httptest.Server
	mu     sync.Mutex
	spans  []Span
	bodies [][]byte // decompressed, as received
	more   chan struct{}
}

// New starts a receiver; Close stops it.
func New() *Receiver {
	r := &Receiver{more: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	isJSON := req.Header.Get("Content-Type") == "application/json"
	if isJSON {
		err = protojson.Unmarshal(raw, &msg)
	} else {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil {
		http.Error(w, "bad export: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.keep(raw, &msg)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	ctype := "application/x-protobuf"
	if isJSON {
		out, _ = protojson.Marshal(&coltracepb.ExportTraceServiceResponse{})
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(out)
}

func (r *Receiver) keep(raw []byte, msg *coltracepb.ExportTraceServiceRequest) {
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind().String(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Attrs: attrs(s.GetAttributes()), Failed: s.GetStatus().GetCode() == 2, Status: s.GetStatus().GetMessage(),
					Service: service,
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Attrs: attrs(e.GetAttributes())})
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, got...)
	r.bodies = append(r.bodies, raw)
	close(r.more)
	r.more = make(chan struct{})
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		if _, isString := v.GetValue().(*commonpb.AnyValue_StringValue); isString || v.GetValue() == nil {
			m[kv.GetKey()] = v.GetStringValue()
		} else {
			b, _ := protojson.Marshal(v)
			m[kv.GetKey()] = string(b)
		}
	}
	return m
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Contains reports whether any body received holds b, anywhere (a name,
// an attribute, an event, the resource).
func (r *Receiver) Contains(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, body := range r.bodies {
		if bytes.Contains(body, b) {
			return true
		}
	}
	return false
}

// WaitFor waits until ok holds of the spans received, or ctx ends; it
// returns the spans it last saw and whether ok held.
func (r *Receiver) WaitFor(ctx context.Context, ok func([]Span) bool) ([]Span, bool) {
	for {
		r.mu.Lock()
		spans, more := append([]Span(nil), r.spans...), r.more
		r.mu.Unlock()
		if ok(spans) {
			return spans, true
		}
		select {
		case <-ctx.Done():
			return spans, false
		case <-more:
		}
	}
}
