package httpjson_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/metnos/gateway/internal/httpjson"
)

// TestSetContentType_Shared: every answer says application/json, and what
// one handler adds to its header after it reaches no other answer.
func TestSetContentType_Shared(t *testing.T) {
	first := httptest.NewRecorder()
	httpjson.Write(first, http.StatusOK, map[string]int{"n": 1})
	first.Header().Add("Content-Type", "text/plain") // a handler's own change
	second := httptest.NewRecorder()
	httpjson.Error(second, http.StatusBadRequest, "invalid_json", "bad")
	if got := second.Result().Header.Values("Content-Type"); len(got) != 1 || got[0] != "application/json" {
		t.Fatalf("second answer's Content-Type %q, want [application/json]", got)
	}
	if got := second.Body.String(); got != `{"error":{"code":"invalid_json","message":"bad"}}`+"\n" {
		t.Fatalf("body %s", got)
	}
}
