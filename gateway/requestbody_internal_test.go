package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// asEncodingJSON is what decodeJSON makes of body: its requestBody, or
// false where it refuses it.
func asEncodingJSON(body string) (requestBody, bool) {
	var b requestBody
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, false
	}
	if _, extra := dec.Token(); extra != io.EOF {
		return b, false
	}
	return b, true
}

// checkFast: wherever the fast pass takes a body, encoding/json takes it
// too and reads the same requestBody.
func checkFast(t *testing.T, body string) (took bool) {
	t.Helper()
	var got requestBody
	if !fastRequestBody(body, &got) {
		return false
	}
	want, ok := asEncodingJSON(body)
	if !ok {
		t.Fatalf("fast pass took %q, which encoding/json refuses", body)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast pass %+v, encoding/json %+v", body, got, want)
	}
	return true
}

// fastBodies are bodies around the fast pass's edges.
var fastBodies = []string{
	`{"call_id":"bench-1-2","capability":"llm:local","intent":"summarise locally","executor":"summariser","args":{"text":"x"}}`,
	` { "capability" : "fs:read" , "target" : "/home/owner/a.txt" , "args" : { } , "context" : {"mode":"plan","mode":"act"} } ` + "\n",
	`{}`, `{"args":{}}`, `{"args":null}`, `{"args":{"n":1}}`, `{"args":{"a":{"b":"c"}}}`, `{"Call_ID":"x"}`,
	`{"call_id":"a","call_id":"b"}`, `{"args":{"a":"1"},"args":{"b":"2"}}`, `{"call_id":"\u00e9"}`, `{"call_id":"é"}`,
	`{"call_id":"a\"b"}`, "{\"call_id\":\"a\tb\"}", `{"call_id":null}`, `{"call_id":1}`, `{"timeout_s":5}`,
	`{"nope":"x"}`, `{"call_id":"x"}{}`, `{"call_id":"x"} x`, `{"call_id":"x",}`, `{"call_id":"x"`, `[]`, `""`, ``,
	`{"intent":"a","summary":"b","grant_target":"c","callback_url":"http://127.0.0.1/cb","session_id":"s","autonomy":"Full","channel":"web","sender_id":"owner"}`,
}

func TestFastRequestBody_AsEncodingJSON(t *testing.T) {
	took := 0
	for _, body := range fastBodies {
		if checkFast(t, body) {
			took++
		}
	}
	if took < 5 {
		t.Fatalf("the fast pass took %d of the bodies, want the common ones", took)
	}
	// Random mutations of the common shapes: a byte changed, dropped or
	// doubled.
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte(`{}[]":, ` + "\t\n\\abcé0n")
	for range 50000 {
		b := []byte(fastBodies[r.IntN(3)])
		i := r.IntN(len(b))
		switch r.IntN(3) {
		case 0:
			b[i] = alphabet[r.IntN(len(alphabet))]
		case 1:
			b = append(b[:i], b[i+1:]...)
		default:
			b = append(b[:i+1], b[i:]...)
		}
		checkFast(t, string(b))
	}
}

func FuzzFastRequestBody(f *testing.F) {
	for _, body := range fastBodies {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) { checkFast(t, body) })
}

// TestDecodeRequestBody_AnswersAsDecodeJSON: every body, taken by the fast
// pass or not, too large or cut off, gets decodeJSON's answer.
func TestDecodeRequestBody_AnswersAsDecodeJSON(t *testing.T) {
	bodies := append([]string{
		`{"call_id":"x","timeout_s":"5"}`, `{"args":[1]}`, strings.Repeat(" ", MaxBodyBytes) + `{}`,
		`{"call_id":"` + strings.Repeat("a", MaxBodyBytes) + `"}`, `{"x":` + strings.Repeat(" ", MaxBodyBytes),
	}, fastBodies...)
	for _, body := range bodies {
		answer := func(decode func(http.ResponseWriter, *http.Request, *requestBody) bool) (bool, requestBody, int, string) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/v1/requests", bytes.NewBufferString(body))
			var b requestBody
			ok := decode(rec, req, &b)
			return ok, b, rec.Code, rec.Body.String()
		}
		okW, bW, codeW, ansW := answer(func(w http.ResponseWriter, r *http.Request, b *requestBody) bool { return decodeJSON(w, r, b) })
		okG, bG, codeG, ansG := answer(decodeRequestBody)
		if okG != okW || codeG != codeW || ansG != ansW || okW && !reflect.DeepEqual(bG, bW) {
			t.Errorf("%.60q: got %v %d %s %+v, decodeJSON %v %d %s %+v", body, okG, codeG, ansG, bG, okW, codeW, ansW, bW)
		}
	}
}
