package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/metnos/gateway/client"
)

// The examples run against a throwaway gateway started in-process
// (newLive); in real use, the URL is yours: client.New(os.Getenv("GATEWAY_URL"), os.Getenv("GATEWAY_TOKEN")).

// Ask before acting: policy answers at once when it can.
func Example() {
	gw, stop := newLive()
	defer stop()

	c := client.New(gw.URL, "tok-agent-a1")
	r, err := c.Request(context.Background(), client.Req{
		Capability: "llm:local", // needs no person at autonomy Supervised
		Intent:     "summarize the meeting notes",
	}, 10*time.Minute)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Status, r.Allowed())
	// Output: allowed true
}

// Check what policy would say without asking anyone: nothing is stored.
func ExampleClient_Check() {
	gw, stop := newLive()
	defer stop()

	c := client.New(gw.URL, "tok-agent-a1")
	res, err := c.Check(context.Background(), client.Req{Capability: "fs:read", Target: "~/.ssh/id_rsa"})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Outcome, res.BlockedBy)
	// Output: denied guard
}

// Request waits for a person when policy needs one. Here an admin agent
// plays the person and taps Allow once through the API.
func ExampleClient_Request() {
	gw, stop := newLive()
	defer stop()
	ctx := context.Background()

	c := client.New(gw.URL, "tok-agent-a1")
	admin := client.New(gw.URL, "tok-admin")
	events, _ := admin.Events(ctx)
	go func() {
		for e := range events {
			if e.Kind == client.EventRequired {
				admin.Decide(ctx, e.ID, client.AllowOnce)
				return
			}
		}
	}()

	r, err := c.Request(ctx, client.Req{
		CallID:     "deploy-42", // asking again with it finds the same request
		Capability: "code:exec",
		Target:     "npm install",
		Intent:     "install the dependencies",
	}, 10*time.Minute)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Status, r.Decision, "by", r.DecidedBy)
	// Output: allowed allow_once by api:admin
}

// Get long-polls a request already posted: it returns when a person
// decides or when the wait runs out, whichever is first.
func ExampleClient_Get() {
	gw, stop := newLive()
	defer stop()
	ctx := context.Background()

	c := client.New(gw.URL, "tok-agent-a1")
	r, _ := c.Request(ctx, client.Req{Capability: "fs:write", Target: "/srv/app/config.yaml"}, 0)
	fmt.Println(r.Status)

	r, _ = c.Get(ctx, r.ID, 100*time.Millisecond) // nobody answers in time
	fmt.Println(r.Status)

	client.New(gw.URL, "tok-admin").Decide(ctx, r.ID, client.Deny)
	r, _ = c.Get(ctx, r.ID, time.Minute)
	fmt.Println(r.Status)
	// Output:
	// pending
	// pending
	// denied
}

// Cancel withdraws a request the agent no longer needs; its cards say so.
func ExampleClient_Cancel() {
	gw, stop := newLive()
	defer stop()
	ctx := context.Background()

	c := client.New(gw.URL, "tok-agent-a1")
	r, _ := c.Request(ctx, client.Req{Capability: "fs:write", Target: "/tmp/report.pdf"}, 0)
	r, err := c.Cancel(ctx, r.ID)
	fmt.Println(r.Status, err)

	_, err = c.Cancel(ctx, r.ID) // already finished: 409, with the request
	if ae, ok := err.(*client.APIError); ok {
		fmt.Println(ae.StatusCode, ae.Code, ae.Request.Status)
	}
	// Output:
	// cancelled <nil>
	// 409 already_decided cancelled
}

// An event-driven agent follows its stream instead of waiting on each
// call: approval_required when a card goes out, approval_resolved when it
// is decided. The stream reconnects by itself.
func ExampleClient_Events() {
	gw, stop := newLive()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	c := client.New(gw.URL, "tok-agent-a1")
	events, err := c.Events(ctx)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	c.Request(ctx, client.Req{CallID: "call-1", Capability: "code:exec", Target: "make deploy"}, 0)

	for e := range events {
		switch e.Kind {
		case client.EventRequired:
			fmt.Println(e.Kind, e.CallID, e.Capability, e.Command)
			client.New(gw.URL, "tok-admin").Decide(ctx, e.ID, client.Deny)
		case client.EventResolved:
			fmt.Println(e.Kind, e.CallID, e.Decision, e.Status)
			return
		case client.EventReconnected:
			// Events of the gap are lost: Get the requests still outstanding.
		}
	}
	// Output:
	// approval_required call-1 code:exec make deploy
	// approval_resolved call-1 deny denied
}

// VerifyCallback checks the X-Gateway-Signature of a callback body: an
// HMAC-SHA256 keyed with the agent's token.
func ExampleVerifyCallback() {
	token := "tok-agent-a1"
	body := []byte(`{"id":"r1","call_id":"c1","command":"npm install","decision":"allow_once","status":"allowed"}`)
	m := hmac.New(sha256.New, []byte(token))
	m.Write(body)
	header := "sha256=" + hex.EncodeToString(m.Sum(nil)) // what the gateway sends

	fmt.Println(client.VerifyCallback(token, body, header))
	fmt.Println(client.VerifyCallback("another-token", body, header))
	// Output:
	// true
	// false
}

// An agent server's approve endpoint takes the gateway's callback as it
// is: ParseCallback checks the signature and decodes it.
func ExampleParseCallback() {
	gw, stop := newLive()
	defer stop()
	ctx := context.Background()

	const token = "tok-agent-a1"
	done := make(chan client.Callback, 1)
	approve := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb, err := client.ParseCallback(token, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		done <- cb // run cb.Command if cb.Allowed(), else tell the user
	}))
	defer approve.Close()

	c := client.New(gw.URL, token)
	r, _ := c.Request(ctx, client.Req{CallID: "c1", Capability: "code:exec", Target: "npm install",
		CallbackURL: approve.URL + "/approve"}, 0)
	client.New(gw.URL, "tok-admin").Decide(ctx, r.ID, client.AllowOnce)

	cb := <-done
	fmt.Println(cb.CallID, cb.Command, cb.Decision, cb.Status)
	// Output: c1 npm install allow_once allowed
}
