// Package httpjson writes the gateway's JSON answers, the API's and the
// web page's alike: a value, an error with its stable code, and the bound
// on every request body.
package httpjson

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// MaxBodyBytes is the largest request body accepted anywhere (SPEC §7).
const MaxBodyBytes = 64 << 10

// errorBody is the body of an error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// contentType is the Content-Type of every JSON answer.
var contentType = []string{"application/json"}

// SetContentType sets w's Content-Type to JSON's: the header map's value
// is one shared slice, where Header().Set allocated one on every answer.
// Nothing writes to it: net/http copies the values at WriteHeader.
func SetContentType(w http.ResponseWriter) { w.Header()["Content-Type"] = contentType }

// Write answers status with v as JSON (HTML not escaped); a value that
// writes its own JSON (AppendJSON) writes it.
func Write(w http.ResponseWriter, status int, v any) {
	SetContentType(w)
	w.WriteHeader(status)
	if a, ok := v.(jsonAppender); ok {
		WriteAppended(w, a.AppendJSON)
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteAppended writes what appendJSON appends and a newline, the bytes a
// json.Encoder would write (see approvals.Request.AppendJSON).
func WriteAppended(w http.ResponseWriter, appendJSON func([]byte) []byte) {
	bp := jsonBufs.Get().(*[]byte)
	b := append(appendJSON((*bp)[:0]), '\n')
	_, _ = w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		jsonBufs.Put(bp)
	}
}

// jsonAppender is a value that writes its own JSON, as encoding/json would.
type jsonAppender interface{ AppendJSON([]byte) []byte }

var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// Error answers status with the body of every error answer: a stable
// code for programs and a message for people.
func Error(w http.ResponseWriter, status int, code, msg string) {
	var e errorBody
	e.Error.Code, e.Error.Message = code, msg
	Write(w, status, e)
}

// CleanMsg drops the "decide request …:" wrapping so a client reads the cause.
func CleanMsg(err error) string {
	msg := err.Error()
	for _, p := range []string{"invalid: ", "invalid request: "} {
		if i := strings.LastIndex(msg, p); i >= 0 {
			return msg[i+len(p):]
		}
	}
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "decide request") {
		return msg[i+2:]
	}
	return msg
}
