// Command go-agent is a small agent written with the gateway's Go client
// (package client). It walks through three steps, asking the gateway
// before each, the way a real agent would:
//
//  1. read the clock (time:read): policy allows it at once;
//  2. read ~/.ssh/id_rsa (fs:read): the guard denies it at once;
//  3. run a shell command (code:exec, default "go version"): a card goes
//     to the owner; the agent waits, runs the command only if allowed, and
//     withdraws the request if nobody answers within -wait.
//
// With -events it also follows its event stream, and with -callback it
// serves a callback endpoint on 127.0.0.1 and asks for step 3's answer
// there too, printing what an event-driven agent would receive. A
// callback URL must match one of the agent's agents[].callbacks patterns,
// which name a loopback address explicitly; the local agent `make run`
// generates has none, so -callback needs a config that gives one.
//
//	make run                                         # prints the export line
//	export GATEWAY_URL=http://127.0.0.1:8080 GATEWAY_TOKEN=gw_…
//	go run ./examples/go-agent                       # then tap Allow once on http://localhost:8080/
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/metnos/gateway/client"
)

func main() {
	command := flag.String("cmd", "go version", "the shell command step 3 asks to run")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for a person")
	follow := flag.Bool("events", false, "also print the agent's event stream")
	callback := flag.Bool("callback", false, "also ask for step 3's answer on a local callback endpoint (needs agents[].callbacks)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	url, token := os.Getenv("GATEWAY_URL"), os.Getenv("GATEWAY_TOKEN")
	if url == "" || token == "" {
		log.Fatal("set GATEWAY_URL and GATEWAY_TOKEN (make run prints them)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := client.New(url, token)

	if *follow {
		followEvents(ctx, c)
	}
	callbackURL := ""
	if *callback {
		callbackURL = serveCallbacks(token)
	}

	steps := []client.Req{
		{Capability: "time:read", Intent: "read the clock for the agent", Executor: "go_agent"},
		{Capability: "fs:read", Target: "~/.ssh/id_rsa", Intent: "read the agent key", Executor: "go_agent"},
		{CallID: fmt.Sprintf("go-agent-%d", time.Now().UnixNano()), Capability: "code:exec", Target: *command,
			Intent: "check the go toolchain for the agent", Executor: "go_agent", CallbackURL: callbackURL},
	}
	for i, step := range steps {
		log.Printf("step %d: asking for %s %q", i+1, step.Capability, step.Target)
		if err := ask(ctx, c, step, *wait); err != nil {
			log.Printf("step %d: %v", i+1, err)
		}
	}
	if *follow || *callback {
		time.Sleep(500 * time.Millisecond) // let the last event and callback print
	}
}

// followEvents prints the event stream: approval_required when a card
// goes out, approval_resolved when it is decided. It reconnects by itself.
func followEvents(ctx context.Context, c *client.Client) {
	events, err := c.Events(ctx)
	if err != nil {
		log.Fatalf("events: %v", err)
	}
	go func() {
		for e := range events {
			switch e.Kind {
			case client.EventRequired:
				log.Printf("[event] %s %s: %s %q", e.Kind, e.ID, e.Capability, e.Command)
			case client.EventResolved:
				log.Printf("[event] %s %s: %s %s", e.Kind, e.ID, e.Status, e.Decision)
			default:
				log.Printf("[event] %s", e.Kind)
			}
		}
	}()
}

// serveCallbacks serves a callback endpoint, as an agent server's approve
// endpoint would be, and returns its URL.
func serveCallbacks(token string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	callbackURL := "http://" + ln.Addr().String() + "/approve"
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb, err := client.ParseCallback(token, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		log.Printf("[callback] %s call %s: %s %s (command %q)", cb.ID, cb.CallID, cb.Status, cb.Decision, cb.Command)
	}))
	return callbackURL
}

// ask asks before one step and acts only when allowed.
func ask(ctx context.Context, c *client.Client, step client.Req, wait time.Duration) error {
	r, err := c.Request(ctx, step, wait)
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		return fmt.Errorf("the gateway refused: %s (%s)", ae.Message, ae.Code)
	case err != nil:
		return err
	case !r.Finished():
		if _, err := c.Cancel(context.Background(), r.ID); err != nil {
			return fmt.Errorf("no answer within %s; withdrawing %s: %v", wait, r.ID, err)
		}
		return fmt.Errorf("no answer within %s; request %s withdrawn", wait, r.ID)
	case !r.Allowed():
		who := r.DecidedBy
		if who == "" {
			who = "policy"
		}
		msg := fmt.Sprintf("%s by %s: %s", r.Status, who, r.Reason)
		if r.Note != "" {
			msg += fmt.Sprintf(" (note: %q)", r.Note)
		}
		return errors.New(msg)
	}
	if r.Decision != "" {
		log.Printf("  allowed: %s by %s", r.Decision, r.DecidedBy)
	} else {
		log.Printf("  allowed: %s", r.Reason)
	}
	if step.Capability == "code:exec" {
		out, err := exec.CommandContext(ctx, "sh", "-c", step.Target).CombinedOutput()
		log.Printf("  ran %q: %s", step.Target, out)
		return err
	}
	return nil
}
