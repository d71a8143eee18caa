// Command otlpsink is an OTLP trace endpoint that reads every export and
// drops it: the collector of the benchmark with telemetry on
// (docs/reliability.md#telemetry), so that the gateway's figures count
// recording and exporting its spans, not a collector's work. It listens
// on loopback only, answers OTLP/HTTP (POST /v1/traces, protobuf, gzip or
// not) and, with -grpc, OTLP/gRPC, counts the exports, bytes and spans it
// received, and prints them when it is stopped (SIGINT, SIGTERM).
//
//	go build -o /tmp/otlpsink ./.ci/otlpsink
//	/tmp/otlpsink -http 127.0.0.1:4318 [-grpc 127.0.0.1:4317]
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// counts is what the sink received.
type counts struct{ exports, bytes, spans, refused atomic.Int64 }

func main() {
	httpAddr := flag.String("http", "127.0.0.1:4318", "OTLP/HTTP address (loopback)")
	grpcAddr := flag.String("grpc", "", "OTLP/gRPC address (loopback); none when empty")
	flag.Parse()
	if err := run(*httpAddr, *grpcAddr); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}

func run(httpAddr, grpcAddr string) error {
	var c counts
	hl, err := listenLoopback(httpAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(c.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(hl) }()
	fmt.Printf("otlpsink: OTLP/HTTP on http://%s\n", hl.Addr())
	var gs *grpc.Server
	if grpcAddr != "" {
		gl, err := listenLoopback(grpcAddr)
		if err != nil {
			return err
		}
		gs = grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(gs, &grpcSink{c: &c})
		go func() { _ = gs.Serve(gl) }()
		fmt.Printf("otlpsink: OTLP/gRPC on %s\n", gl.Addr())
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	if gs != nil {
		gs.Stop()
	}
	fmt.Printf("otlpsink: %d exports, %d bytes, %d spans received; %d refused\n",
		c.exports.Load(), c.bytes.Load(), c.spans.Load(), c.refused.Load())
	return nil
}

// listenLoopback listens on addr, which must be a loopback address.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%q: not a loopback address (127.0.0.0/8 or ::1)", addr)
	}
	return net.Listen("tcp", addr)
}

// serveHTTP reads an OTLP/HTTP export, counts it, and answers as a
// collector does: an empty ExportTraceServiceResponse.
func (c *counts) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		c.refused.Add(1)
		http.Error(w, "POST /v1/traces only", http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		c.refused.Add(1)
		http.Error(w, "Content-Type "+ct+": only application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	buf := bufs.Get().(*[]byte)
	defer bufs.Put(buf)
	raw, err := readBody(r, *buf)
	*buf = raw[:0]
	if err != nil {
		c.refused.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := countSpans(raw)
	if err != nil {
		c.refused.Add(1)
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.exports.Add(1)
	c.bytes.Add(int64(len(raw)))
	c.spans.Add(int64(n))
	// An empty ExportTraceServiceResponse is no bytes at all.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// bufs are the bodies' buffers, reused from export to export: the sink
// reads every body into one instead of growing a new one each time, so
// that what it costs the machine beside the gateway is the reading, not
// its garbage.
var bufs = sync.Pool{New: func() any { return new([]byte) }}

// maxBody bounds what one export may hold.
const maxBody = 64 << 20

// readBody reads the body of r into buf (its bytes, reused), unzipped
// when it says gzip.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > maxBody {
		return buf[:0], fmt.Errorf("body of %d bytes: more than %d", r.ContentLength, maxBody)
	}
	if r.ContentLength >= 0 && r.Header.Get("Content-Encoding") == "" {
		buf = slices.Grow(buf[:0], int(r.ContentLength))[:r.ContentLength]
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return buf[:0], fmt.Errorf("read: %w", err)
		}
		return buf, nil
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return buf[:0], fmt.Errorf("bad gzip: %w", err)
		}
		body = zr
	}
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(io.LimitReader(body, maxBody+1)); err != nil {
		return b.Bytes(), fmt.Errorf("read: %w", err)
	}
	if b.Len() > maxBody {
		return b.Bytes(), fmt.Errorf("body: more than %d bytes", maxBody)
	}
	return b.Bytes(), nil
}

// countSpans counts the spans of an encoded ExportTraceServiceRequest
// (resource_spans = 1, their scope_spans = 2, their spans = 2) without
// decoding them.
func countSpans(b []byte) (int, error) {
	n := 0
	err := fields(b, 1, func(rs []byte) error {
		return fields(rs, 2, func(ss []byte) error {
			return fields(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// fields calls fn with each length-delimited field numbered num of the
// message b, and skips the others.
func fields(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		f, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if f == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(f, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		b = b[m:]
	}
	return nil
}

// grpcSink is the OTLP/gRPC trace service, counting what it is sent.
type grpcSink struct {
	coltracepb.UnimplementedTraceServiceServer
	c *counts
}

func (g *grpcSink) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	if req == nil {
		return nil, errors.New("no request")
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	g.c.exports.Add(1)
	g.c.bytes.Add(int64(proto.Size(req)))
	g.c.spans.Add(int64(n))
	return &coltracepb.ExportTraceServiceResponse{}, nil
}
