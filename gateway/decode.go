package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// decodeOptions are encoding/json's rules (case-insensitive names,
// duplicate names, invalid UTF-8 replaced, …) with unknown fields refused:
// what a json.Decoder with DisallowUnknownFields accepts, and the same
// values, held so by FuzzDecodeJSON. Its errors are not encoding/json's
// (the first one ends the decode, where encoding/json checks the whole
// value's syntax first and goes on past a field it cannot set): every
// body refused is decoded again by a json.Decoder.
var decodeOptions = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.RejectUnknownMembers(true),
	jsonv1.ReportErrorsWithLegacySemantics(false))

// bodyBufs hold request bodies while they are decoded.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// decodeJSON reads a JSON body of at most MaxBodyBytes, refusing unknown
// fields and trailing data. It writes the error answer itself and reports
// whether decoding succeeded.
//
// The body is read whole into a pooled buffer and decoded in one pass.
// Anything refused is decoded again by decodeJSONStream, from the same
// bytes and read error, so every error answer is the one a json.Decoder
// over the body gives.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= MaxBodyBytes+bytes.MinRead {
			buf.Reset()
			bodyBufs.Put(buf)
		}
	}()
	buf.Reset()
	_, readErr := buf.ReadFrom(r.Body)
	if readErr == nil && jsonv2.Unmarshal(buf.Bytes(), v, decodeOptions) == nil {
		return true
	}
	rv := reflect.ValueOf(v).Elem()
	rv.SetZero() // what the failed pass filled in
	var body io.Reader = bytes.NewReader(buf.Bytes())
	if readErr != nil {
		body = io.MultiReader(body, errReader{readErr})
	}
	return decodeJSONStream(w, body, v)
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// decodeJSONStream decodes body with a json.Decoder, refusing unknown
// fields and trailing data, and writes the error answer of what it refuses.
func decodeJSONStream(w http.ResponseWriter, body io.Reader, v any) bool {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("body over %d bytes", MaxBodyBytes))
	case errors.As(err, &syntax):
		writeError(w, http.StatusBadRequest, "invalid_json", fmt.Sprintf("malformed JSON at byte %d", syntax.Offset))
	case errors.As(err, &typ) && typ.Field == "": // not an object at all
		writeError(w, http.StatusBadRequest, "invalid_json", fmt.Sprintf("want a JSON object, got %s", typ.Value))
	case errors.As(err, &typ):
		writeError(w, http.StatusBadRequest, "invalid_"+typ.Field, fmt.Sprintf("%s: want %s, got %s", typ.Field, typ.Type, typ.Value))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "invalid_json", "empty body; want a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		writeError(w, http.StatusBadRequest, "unknown_field", fmt.Sprintf("%s: unknown field", field))
	default:
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
	}
	return false
}
