package approvals

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/metnos/gateway/internal/callbackurl"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/metnos/gateway/telemetry"
)

// SignatureHeader carries the HMAC of a callback body.
const SignatureHeader = "X-Gateway-Signature"

// callbackAttempts and the first delay: 1s, 2s, 4s … about a minute in all.
const (
	callbackAttempts = 7
	callbackFirst    = time.Second
)

// CallbackBody is what a callback POSTs: the shape an agent server's
// approve endpoint takes as it is. Command is the request's target (the
// shell command for code:exec).
type CallbackBody struct {
	ID       string    `json:"id"`
	CallID   string    `json:"call_id"`
	Command  string    `json:"command"`
	Decision *Decision `json:"decision"`
	Status   Status    `json:"status"`
}

// Sign returns the X-Gateway-Signature value for body under key.
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks a signature header against body in constant time.
func VerifySignature(key, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(key, body)), []byte(header))
}

type callbacker struct {
	key     func(agent string) []byte
	allowed func(agent, url string) (callbackurl.Allowed, error)
	resolve callbackurl.Resolver
	log     *slog.Logger
	tel     *telemetry.Provider
	wg      sync.WaitGroup
	// mu orders every wg.Add before wait's wg.Wait (the WaitGroup's
	// rule): once stopping, send starts nothing.
	mu       sync.Mutex
	stopping bool
	ctx      context.Context
	stop     context.CancelFunc
}

func newCallbacker(key func(string) []byte, allowed func(agent, url string) (callbackurl.Allowed, error),
	resolve callbackurl.Resolver, log *slog.Logger, tel *telemetry.Provider) *callbacker {
	ctx, stop := context.WithCancel(context.Background())
	if resolve == nil {
		resolve = callbackurl.DefaultResolver
	}
	return &callbacker{key: key, allowed: allowed, resolve: resolve, log: log, tel: tel, ctx: ctx, stop: stop}
}

// client is the HTTP client of one callback: it connects only to the
// addresses the callback's pattern allows (checked on each resolved
// address), through no proxy, and follows no redirect (one would turn the
// POST into a GET elsewhere: it counts as a failure).
func (c *callbacker) client(a callbackurl.Allowed) *http.Client {
	return &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: a.DialContext(c.resolve), TLSHandshakeTimeout: 10 * time.Second,
			DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// send delivers r's resolution in the background, retrying with backoff:
// a slow or dead callback URL never delays a decision. traceparent, when
// set, is r's trace: the delivery is a span of it, and the POST carries
// its traceparent.
func (c *callbacker) send(r Request, traceparent string) {
	if r.CallbackURL == "" || c.key == nil || c.allowed == nil {
		return
	}
	allowed, err := c.allowed(r.Agent, r.CallbackURL)
	if err != nil {
		c.log.Warn("callback not sent: not allowed", "request_id", r.ID, "agent", r.Agent, "err", err)
		return
	}
	key := c.key(r.Agent)
	if len(key) == 0 {
		// An agent no longer configured has no token: a body signed with an
		// empty key would be forgeable by anyone, so send nothing.
		c.log.Warn("callback not sent: the agent has no key", "request_id", r.ID, "agent", r.Agent)
		return
	}
	body, _ := json.Marshal(CallbackBody{ID: r.ID, CallID: r.CallID, Command: r.Target, Decision: r.Decision, Status: r.Status})
	sig := Sign(key, body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		c.log.Warn("callback not sent: shutting down", "request_id", r.ID, "agent", r.Agent)
		return
	}
	c.wg.Add(1)
	go c.deliver(allowed, r.ID, r.Agent, body, sig, traceparent)
}

// deliver posts one callback, retrying with backoff (a goroutine of its
// own, counted in c.wg). It takes the few fields it needs, not the
// Request: a closure over r made every call of send, which mostly returns
// at once (no callback_url), copy the whole Request to the heap.
func (c *callbacker) deliver(to callbackurl.Allowed, id, agent string, body []byte, sig, traceparent string) {
	defer c.wg.Done()
	sctx, span := c.tel.StartIn(c.ctx, traceparent, "callback", time.Time{})
	defer span.End()
	client := c.client(to)
	delay := callbackFirst
	for attempt := 1; attempt <= callbackAttempts; attempt++ {
		span.Int(telemetry.KeyAttempt, attempt)
		err := c.post(client, to.URL, body, sig, telemetry.Traceparent(sctx))
		if err == nil {
			return
		}
		if attempt == callbackAttempts {
			span.Fail("callback not delivered")
		}
		c.log.Warn("callback failed", "request_id", id, "agent", agent, "attempt", attempt, "err", err)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay *= 2
	}
}

func (c *callbacker) post(client *http.Client, url string, body []byte, sig, traceparent string) error {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, sig)
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("callback answered %s", resp.Status)
	}
	return nil
}

// wait gives in-flight callbacks a few seconds at shutdown, then stops them.
func (c *callbacker) wait() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.stop()
		<-done
	}
}
