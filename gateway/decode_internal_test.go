package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/metnos/gateway/replay"
)

// decodeTargets are the bodies the handlers decode, each a fresh pointer.
var decodeTargets = []func() any{
	func() any { return new(requestBody) },
	func() any { return new(ruleBody) },
	func() any { return new(rulePatchBody) },
	func() any { return new(tokenBody) },
	func() any { return new(replay.Body) },
	func() any {
		return new(struct {
			Decision   string `json:"decision"`
			Scope      string `json:"scope"`
			Duration   string `json:"duration"`
			EveryAgent bool   `json:"every_agent"`
		})
	},
	func() any {
		return new(struct {
			Channel  string `json:"channel"`
			SenderID string `json:"sender_id"`
			TTL      string `json:"ttl"`
		})
	},
}

// decodeBoth decodes body into a fresh value of each target with
// decodeJSON (through a real request) and with decodeJSONStream (a
// json.Decoder over the same bytes), and fails on any difference: accepted
// or not, the value decoded, the answer's status, headers and bytes.
func decodeBoth(t *testing.T, body []byte) {
	t.Helper()
	for i, target := range decodeTargets {
		fast, std := target(), target()
		fastRec, stdRec := httptest.NewRecorder(), httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/check", bytes.NewReader(body))
		fastOK := decodeJSON(fastRec, req, fast)
		stdOK := decodeJSONStream(stdRec, http.MaxBytesReader(stdRec, io.NopCloser(bytes.NewReader(body)), MaxBodyBytes), std)
		if fastOK != stdOK {
			t.Fatalf("target %d, body %q: decodeJSON ok=%v (%s), a json.Decoder ok=%v (%s)", i, body, fastOK, fastRec.Body, stdOK, stdRec.Body)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("target %d, body %q: decodeJSON gave %#v, a json.Decoder %#v", i, body, fast, std)
		}
		if fastRec.Code != stdRec.Code || fastRec.Body.String() != stdRec.Body.String() ||
			!reflect.DeepEqual(fastRec.Header(), stdRec.Header()) {
			t.Fatalf("target %d, body %q: decodeJSON answered %d %v %s, a json.Decoder %d %v %s", i, body,
				fastRec.Code, fastRec.Header(), fastRec.Body, stdRec.Code, stdRec.Header(), stdRec.Body)
		}
	}
}

var decodeSeeds = []string{
	`{"capability":"fs:read","target":"/home/roberto/p0010/f1.txt","autonomy":"Supervised","channel":"telegram","sender_id":"roberto"}`,
	`{"call_id":"c1","capability":"llm:local","intent":"summarise","executor":"perf","args":{"path":"/tmp/x","n":[1,{"a":null}],"f":1.5e3},"context":{"mode":"plan"}}`,
	`{"CAPABILITY":"fs:read","Target":"/tmp/y","capability":"fs:write"}`,
	`{"sender_id":"a","senderid":"b","SENDER_ID":"c","sender-id":"d"}`,
	`{"capability":"fs:read","capability":"fs:write"}`,
	`{"args":{"a":1},"args":{"b":2}}`,
	`{"args":{"a":1,"a":{"x":2}}}`,
	`{"args":null}`, `{"capability":null}`, `{"timeout_s":"1"}`, `{"timeout_s":1e400}`, `{"timeout_s":-0}`,
	`{"capability":"fs:read","nope":1}`, `{"nope":1,"capability":2}`, `{"capability":2,"nope":1}`,
	`{"capability":1,"target":"/tmp/x"}`, `{"capability":"fs:read","target":"/tmp/x","args":[]}`,
	`{"capability":"fs:read"} {}`, `{"capability":"fs:read"}   `, "{\"capability\":\"fs:read\"}\n", `{"nope":1} x`, `{} x`, `{}}`,
	`{"target":"\ud800"}`, `{"target":"\u0000x"}`, "{\"target\":\"\xff\"}", "{\"ar\xffgs\":1}", `{"target":"\/x\u00e9"}`,
	`{"position":{"before":"r1"}}`, `{"position": [ 1 , 2 ] }`, `{"position":"top"}`, `{"position":null}`,
	`{"target":null,"action":"block"}`, `{"max_requests":3,"targets":{"fs:read":["/a","/b"]}}`, `{"max_requests":3.5}`,
	`{"add_rules":[{"capability":"fs:write","target":"*","action":"block","position":1}],"levels":{"a":"b"}}`,
	`{"add_rules":[{"nope":1}]}`, `{"add_rules":{}}`, `{"every_agent":"yes"}`, `{"every_agent":true}`,
	`{`, `}`, `[]`, `[1,2]`, `null`, `"x"`, `0`, ``, ` `, "\xff\xfe", `{"a":` + strings.Repeat("[", 100),
}

// bigDecodeSeeds are the limits: nesting past encoding/json's, bodies
// past MaxBodyBytes (too big to fuzz from).
var bigDecodeSeeds = []string{
	`{"a":` + strings.Repeat("[", 10000),
	`{"args":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001) + `}`,
	`{"capability":"fs:read","target":"` + strings.Repeat("a", MaxBodyBytes) + `"}`,
	`{"capability":"fs:read"} ` + strings.Repeat("x", MaxBodyBytes),
}

// TestDecodeJSON_AsADecoder: the one-pass decode accepts what a
// json.Decoder with unknown fields refused accepts, decodes the same
// values, and answers what it refuses byte for byte as before.
func TestDecodeJSON_AsADecoder(t *testing.T) {
	for _, s := range append(decodeSeeds, bigDecodeSeeds...) {
		decodeBoth(t, []byte(s))
	}
}

// FuzzDecodeJSON is TestDecodeJSON_AsADecoder over arbitrary bodies.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { decodeBoth(t, body) })
}

// TestDecodeJSON_ReadError: a body cut off by a read error answers what
// a json.Decoder reading the same bytes and error answers.
func TestDecodeJSON_ReadError(t *testing.T) {
	for _, s := range []string{``, `{"capability":`, `{"capability":"fs:read"}`, `x`, `{"capability":"fs:read"} x`} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/check", nil)
		req.Body = failingBody{strings.NewReader(s)}
		var b requestBody
		if decodeJSON(rec, req, &b) {
			t.Fatalf("body %q cut off by a read error was accepted", s)
		}
		stdRec := httptest.NewRecorder()
		var std requestBody
		decodeJSONStream(stdRec, failingBody{strings.NewReader(s)}, &std)
		if rec.Code != stdRec.Code || rec.Body.String() != stdRec.Body.String() {
			t.Fatalf("body %q: %d %s, a json.Decoder %d %s", s, rec.Code, rec.Body, stdRec.Code, stdRec.Body)
		}
		if !strings.Contains(rec.Body.String(), "invalid_json") {
			t.Fatalf("body %q: %s", s, rec.Body)
		}
	}
}

// failingBody reads r, then fails as a body sent too slowly does.
type failingBody struct{ r *strings.Reader }

func (f failingBody) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, fmt.Errorf("read body: %w", ErrSlowBody)
	}
	return f.r.Read(p)
}

func (f failingBody) Close() error { return nil }

// BenchmarkDecodeJSON decodes a check's body of the bench's mix: with a
// json.Decoder over the body, and in one pass.
func BenchmarkDecodeJSON(b *testing.B) {
	body := []byte(`{"capability":"fs:read","target":"/home/roberto/p0010/f123456.txt","autonomy":"Supervised","channel":"telegram","sender_id":"roberto"}`)
	rd := bytes.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/v1/check", nil)
	w := httptest.NewRecorder()
	for _, c := range []struct {
		name   string
		decode func(*requestBody) bool
	}{
		{"decoder", func(v *requestBody) bool {
			return decodeJSONStream(w, http.MaxBytesReader(w, io.NopCloser(rd), MaxBodyBytes), v)
		}},
		{"one-pass", func(v *requestBody) bool { req.Body = io.NopCloser(rd); return decodeJSON(w, req, v) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				var v requestBody
				if !c.decode(&v) {
					b.Fatal(w.Body)
				}
			}
		})
	}
}
