package agenttest_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	agenttest.Cleanup()
	os.Exit(code)
}

// TestStartGateway: the built binary serves, an agent's request waits for
// a person, and the admin decides it.
func TestStartGateway(t *testing.T) {
	g := agenttest.StartGateway(t, "")
	c := client.New(g.URL, agenttest.AgentToken)
	done := make(chan client.Request, 1)
	go func() {
		r, _ := c.Request(context.Background(), client.Req{Capability: "fs:write", Target: "/tmp/agenttest.txt"}, 20*time.Second)
		done <- r
	}()
	e := g.NextPending(t, 10*time.Second)
	g.Decide(t, e.ID, client.AllowOnce)
	if r := <-done; r.ID != e.ID || r.Status != client.StatusAllowed {
		t.Fatalf("got %+v", r)
	}
}

func TestModel(t *testing.T) {
	m := agenttest.NewModel(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		agenttest.SSE(w, "x", []byte(`{"n":1}`))
	})
	for range 2 {
		resp, err := http.Post(m.URL+"/v1/x", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(m.Requests()) != 2 || m.Saw("secret") {
		t.Fatalf("%+v", m.Requests())
	}
}
