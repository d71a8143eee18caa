package gateway

import (
	"net/http"
	"testing"
)

// The trace context headers are looked up by the keys net/http stores
// them under (a lookup by any other spelling allocates that key).
func TestTraceHeaders_Canonical(t *testing.T) {
	for _, k := range []string{hdrTraceparent, hdrTracestate} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is stored as %q", k, c)
		}
	}
}
