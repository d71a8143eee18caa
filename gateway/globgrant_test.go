package gateway_test

import (
	"net/http"
	"testing"

	"github.com/metnos/gateway/approvals"
)

// TestAPI_AllowAlwaysOnAGlobGrantsThatSearchOnly: Allow always on a glob
// search writes a grant for that search, which allows the same search
// again and no plain read of a file the glob could match.
func TestAPI_AllowAlwaysOnAGlobGrantsThatSearchOnly(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("glob-1", "**/*.pdf")).request(t)
	d := g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_always"}).request(t)
	if d.Status != approvals.StatusAllowed || d.GrantID == nil {
		t.Fatalf("allow_always: %s", d.Status)
	}
	again := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, pendingBody("glob-2", "**/*.pdf")).request(t)
	if again.Status != approvals.StatusAllowed {
		t.Errorf("the same search again: %s (%s)", again.Status, again.Reason)
	}
	for i, file := range []string{"inv/04.pdf", "a.pdf"} {
		r := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("glob-read-"+string(rune('a'+i)), file)).request(t)
		if r.Status != approvals.StatusPending {
			t.Errorf("a plain read of %s after a grant on the search: %s (%s)", file, r.Status, r.Reason)
		}
	}
}
