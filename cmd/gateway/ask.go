package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/locale"
)

// withdrawTimeout bounds the DELETE that withdraws a request nobody
// answered in time (or whose asker was interrupted).
const withdrawTimeout = 5 * time.Second

// cmdAsk is `gateway ask`: post an approval request and wait for the
// answer. Exit 0 allowed, 1 denied / expired / withdrawn, 2 error.
func cmdAsk(e *env, args []string) error {
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	var req client.Req
	fs.StringVar(&req.Capability, "capability", "", "capability to ask for, e.g. fs:write (required)")
	fs.StringVar(&req.Target, "target", "", "what it acts on: a path, a host, a command")
	fs.StringVar(&req.Intent, "intent", "", "why, in a few words, for the person deciding")
	fs.StringVar(&req.Executor, "executor", "", "the tool or script that will act")
	fs.StringVar(&req.Summary, "summary", "", "one line shown on the card")
	fs.StringVar(&req.Autonomy, "autonomy", "", "lower the agent's ceiling for this request: ReadOnly, Supervised, Full")
	fs.StringVar(&req.Channel, "channel", "", "principal channel whose grants apply (with --sender)")
	fs.StringVar(&req.SenderID, "sender", "", "principal sender id whose grants apply (with --channel)")
	fs.StringVar(&req.SessionID, "session", "", "the agent's session id (Allow this session grants match only it)")
	fs.StringVar(&req.GrantTarget, "grant-target", "", "what Allow always should grant, e.g. /srv/app/**")
	fs.StringVar(&req.CallID, "call-id", "", "your id for this call: asking again with it finds the same request")
	durationVar(fs, &req.Timeout, "timeout", 0, "how long the request waits for a person before it expires (default approvals.timeout)")
	wait := durationFlag(fs, "wait", 10*time.Minute, "how long to wait for the answer; after it the request is withdrawn")
	asJSON := fs.Bool("json", false, "print the whole request object on stdout")
	list := fs.Bool("list", false, "print what this agent may use (one JSON line per capability) instead of asking")
	blocked := fs.Bool("include-blocked", false, "with --list: also the capabilities denied to this agent")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN; the variable keeps it out of ps)")
	if err := parseNoArgs(fs, "ask", args); err != nil {
		return err
	}
	switch {
	case *list:
		if req.Capability != "" || req.Target != "" {
			return usagef("--list: lists every capability; drop --capability and --target")
		}
	case *blocked:
		return usagef("--include-blocked goes with --list")
	case req.Capability == "":
		return usagef("--capability is required (e.g. --capability fs:write --target /tmp/x)")
	case *wait < 0:
		return usagef("--wait: negative duration %s", *wait)
	case req.Timeout < 0:
		return usagef("--timeout: negative duration %s", req.Timeout)
	}
	fallback := ""
	zone := time.Local // people read times in server.timezone, or this machine's zone
	if *cfgPath != "" || e.getenv("GATEWAY_CONFIG") != "" {
		cfg, err := loadDBConfig(e, *cfgPath)
		if err != nil {
			return err
		}
		fallback = "http://" + cfg.Server.Listen
		zone = cfg.Server.Zone()
	}
	l := locale.New(locale.English, zone, time.Now)
	c, err := agentClient(e, *urlFlag, *tokenFlag, fallback)
	if err != nil {
		return err
	}
	// The caller's trace, as a hook passes its agent's: the request's
	// spans join it.
	c.Traceparent, c.Tracestate = agentTrace(e.getenv)
	if *list {
		caps, err := c.Capabilities(e.ctx, *blocked)
		if err != nil {
			return askFailed(err)
		}
		for _, cp := range caps {
			if err := printJSONLine(e.stdout, cp); err != nil {
				return err
			}
		}
		return nil
	}

	start := time.Now()
	r, err := c.Request(e.ctx, req, 0)
	if err != nil {
		return askFailed(err)
	}
	if !r.Finished() && *wait > 0 {
		stop := startStatus(e.stderr, r, start, l)
		r, err = c.Get(e.ctx, r.ID, *wait-time.Since(start))
		stop()
	}
	var note string
	if err == nil && !r.Finished() {
		r, note = withdraw(c, r, fmt.Sprintf("still pending after %s", *wait))
	} else if err != nil {
		if e.ctx.Err() == nil {
			return askFailed(err)
		}
		r, note = withdraw(c, r, "interrupted")
		if !r.Finished() {
			return exitError{exitUsage, note}
		}
	}
	if *asJSON {
		if _, err := fmt.Fprintf(e.stdout, "%s\n", r.Raw); err != nil {
			return err
		}
	}
	msg := verdict(r, l)
	switch {
	case note != "" && r.Status == client.StatusCancelled:
		msg = note + " (request " + r.ID + ")"
	case note != "":
		msg = note + "; " + msg
	}
	if r.Allowed() {
		fmt.Fprintf(e.stderr, "gateway ask: %s\n", msg)
		return nil
	}
	return exitError{exitFail, msg}
}

// agentClient builds the client from --url/--token, else GATEWAY_URL and
// GATEWAY_TOKEN, else (for the URL only) fallback. A missing one is a
// usage error naming the variable.
func agentClient(e *env, urlFlag, tokenFlag, fallback string) (*client.Client, error) {
	u := firstNonEmpty(urlFlag, e.getenv("GATEWAY_URL"), fallback)
	tok := firstNonEmpty(tokenFlag, e.getenv("GATEWAY_TOKEN"))
	switch {
	case u == "":
		return nil, usagef("GATEWAY_URL is not set (or pass --url), e.g. export GATEWAY_URL=http://127.0.0.1:8080")
	case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://"):
		return nil, usagef("GATEWAY_URL: %q is not an http(s) URL", u)
	case tok == "":
		return nil, usagef("GATEWAY_TOKEN is not set (or pass --token): the agent's bearer token")
	}
	return client.New(u, tok), nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// askFailed is the CLI face of a client error: exit 2 with what went wrong.
func askFailed(err error) error {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusTooManyRequests {
		return exitError{exitUsage, fmt.Sprintf("%s; retry in %s", ae.Message, ae.RetryAfter)}
	}
	if errors.As(err, &ae) {
		return exitError{exitUsage, ae.Message + " (" + ae.Code + ")"}
	}
	return exitError{exitUsage, err.Error()}
}

// withdraw cancels a request nobody answered in time. When it was decided
// in the meantime, that decision is returned instead.
func withdraw(c *client.Client, r client.Request, why string) (client.Request, string) {
	if r.ID == "" {
		return r, why
	}
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	got, err := c.Cancel(ctx, r.ID)
	var ae *client.APIError
	switch {
	case err == nil:
		return got, why + "; request withdrawn"
	case errors.As(err, &ae) && ae.Request != nil:
		return *ae.Request, "" // decided in the last instant: that answer stands
	}
	return r, why + "; could not withdraw the request: " + err.Error()
}

// verdict says in one line how a finished request ended.
func verdict(r client.Request, l locale.Locale) string {
	var s string
	switch r.Status {
	case client.StatusAllowed:
		switch {
		case r.Decision == client.AllowAlways:
			s = "allowed always by " + r.DecidedBy
			if r.GrantID != nil {
				s += fmt.Sprintf(" (grant %d)", *r.GrantID)
			}
		case r.Decision != "":
			s = "allowed once by " + r.DecidedBy
		default:
			s = "allowed: " + r.Reason
		}
	case client.StatusDenied:
		switch {
		case r.Decision != "":
			s = "denied by " + r.DecidedBy
		case r.BlockedBy != "" && r.BlockedBy != "policy":
			s = "denied by the " + r.BlockedBy + ": " + hooks.TrimLayer(r.Reason, r.BlockedBy)
		default:
			s = "denied: " + r.Reason
		}
	case client.StatusExpired:
		s = "expired: nobody answered by " + l.Clock(r.ExpiresAt)
	case client.StatusCancelled:
		s = "cancelled"
	default:
		s = string(r.Status)
	}
	if r.Note != "" {
		s += fmt.Sprintf("; note: %q", r.Note)
	}
	return cards.Safe(s + " (request " + r.ID + ")")
}

// isTerminal reports whether w is a terminal (the status line is for
// people; a log or a pipe gets only the final line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startStatus keeps a one-line status on w while a person decides, when w
// is a terminal. The returned func clears it.
func startStatus(w io.Writer, r client.Request, start time.Time, l locale.Locale) (stop func()) {
	if !isTerminal(w) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			fmt.Fprintf(w, "\r\033[K%s", statusLine(r, time.Since(start), l))
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// statusLine: "waiting for approval of fs:write /x (expires in 9 min, 14:12 CET)… 1m20s".
func statusLine(r client.Request, elapsed time.Duration, l locale.Locale) string {
	target, _ := cards.Cut(strings.Join(strings.Fields(cards.Safe(r.Target)), " "), 60)
	exp := ""
	if !r.ExpiresAt.IsZero() {
		exp = " (" + l.Expires(r.ExpiresAt) + ")"
	}
	return fmt.Sprintf("waiting for approval of %s %s%s… %s", r.Capability, target, exp, elapsed.Truncate(time.Second))
}
