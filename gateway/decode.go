package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// decodeJSON reads a JSON body of at most MaxBodyBytes, refusing unknown
// fields and trailing data. It writes the error answer itself and reports
// whether decoding succeeded.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
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
