// Package client is the Go client of the approval gateway's agent API
// (SPEC §7): ask before acting, wait for the answer, follow the event
// stream, and check the signature of callbacks.
//
// It depends on the standard library only, so an agent can import it
// without pulling in the gateway's database or chat libraries.
//
//	c := client.New(os.Getenv("GATEWAY_URL"), os.Getenv("GATEWAY_TOKEN"))
//	r, err := c.Request(ctx, client.Req{Capability: "fs:write", Target: "/tmp/x"}, 10*time.Minute)
//	if err == nil && r.Allowed() { /* act */ }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxPoll is the longest single long-poll. The server allows 5 minutes;
// staying under a minute keeps idle connections alive through proxies
// that cut them at 60 s. A long-poll returns the moment the request is
// decided, so a shorter poll costs requests, not latency.
const maxPoll = 50 * time.Second

// maxResponseBytes bounds what is read of any answer.
const maxResponseBytes = 4 << 20

// Client talks to one gateway as one agent. Its fields may be set
// directly; New fills them with defaults. A Client is safe for concurrent
// use.
type Client struct {
	// BaseURL is the gateway's address, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Token is the agent's bearer token. It is sent in the Authorization
	// header only and never appears in an error.
	Token string
	// HTTPClient makes the calls. It must not have a Timeout shorter than
	// a long-poll (50 s); cancel with the context instead. nil means a
	// client without a timeout.
	HTTPClient *http.Client
	// Traceparent and Tracestate, when set, are sent as the W3C
	// traceparent and tracestate headers of every call: the caller's
	// trace, which the gateway's spans then join (docs/telemetry.md).
	Traceparent string
	Tracestate  string
}

// New returns a client for the gateway at baseURL, authenticating with
// token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTPClient: &http.Client{}}
}

// Status is where a request is in its life (SPEC §5).
type Status string

// The request states.
const (
	StatusPending   Status = "pending"
	StatusAllowed   Status = "allowed"
	StatusDenied    Status = "denied"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// Finished reports whether the status is final.
func (s Status) Finished() bool { return s != "" && s != StatusPending }

// The decisions a person (or an admin agent) can make.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always"
	Deny        = "deny"
)

// Req is an approval_required event: the body of POST /v1/requests and
// POST /v1/check. Capability is required, and Target unless the
// capability's target kind is none; everything else is optional.
type Req struct {
	// CallID is the agent's own id for the call. Posting the same CallID
	// again returns the same request (no second card), so a retry after a
	// network error is safe.
	CallID     string `json:"call_id,omitempty"`
	Capability string `json:"capability"`
	Target     string `json:"target,omitempty"`
	// Autonomy may lower the agent's ceiling for this request: ReadOnly,
	// Supervised or Full.
	Autonomy string `json:"autonomy,omitempty"`
	// Channel and SenderID name the principal whose grants apply; both or
	// neither (then the agent's defaults).
	Channel  string `json:"channel,omitempty"`
	SenderID string `json:"sender_id,omitempty"`
	// SessionID names the agent's session: "Allow this session" grants
	// match only requests of the same agent and session. Part of what a
	// call_id names.
	SessionID string `json:"session_id,omitempty"`
	Intent    string `json:"intent,omitempty"`
	Executor  string `json:"executor,omitempty"`
	// Args are inspected by the guard and judge; only their keys are stored.
	Args map[string]any `json:"args,omitempty"`
	// Context is what the call declares about itself for vaglio (the seed's
	// mode, step, critical); "critical": false earns a non-critical
	// capability the judge's +0.05. Only its keys are logged; it is not stored.
	Context map[string]any `json:"context,omitempty"`
	Summary string         `json:"summary,omitempty"`
	// GrantTarget suggests what Allow always would grant (a pattern at
	// least as narrow as the capability allows).
	GrantTarget string `json:"grant_target,omitempty"`
	// Timeout is how long the request waits for a person before it
	// expires (clamped to 10 s … 24 h by the server); 0 means the
	// gateway's default.
	Timeout time.Duration `json:"-"`
	// CallbackURL, when set, receives the resolution as a signed POST
	// (see ParseCallback).
	CallbackURL string `json:"callback_url,omitempty"`
}

// MarshalJSON writes Timeout as timeout_s.
func (r Req) MarshalJSON() ([]byte, error) {
	type plain Req
	return json.Marshal(struct {
		plain
		TimeoutS float64 `json:"timeout_s,omitempty"`
	}{plain(r), r.Timeout.Seconds()})
}

// Verdict is vaglio's word on a request: the guard and the judge's score.
type Verdict struct {
	Approved bool    `json:"approved"`
	Score    float64 `json:"score"`
	Reason   string  `json:"reason"`
}

// Step is one layer's word in a decision's trace.
type Step struct {
	Layer   string `json:"layer"`
	Outcome string `json:"outcome,omitempty"`
	Detail  string `json:"detail"`
}

// Request is an approval request as the gateway returns it (SPEC §7).
// Fields the gateway sends as null are zero here.
type Request struct {
	ID       string `json:"id"`
	CallID   string `json:"call_id"`
	Agent    string `json:"agent"`
	Status   Status `json:"status"`
	Decision string `json:"decision"` // AllowOnce, AllowAlways, Deny, or "" when no person decided
	// Outcome is what policy said on arrival: allowed, denied or
	// approval_required.
	Outcome        string     `json:"outcome"`
	Reason         string     `json:"reason"`
	BlockedBy      string     `json:"blocked_by"` // guard, judge, policy or ""
	Vaglio         *Verdict   `json:"vaglio"`
	Capability     string     `json:"capability"`
	Critical       bool       `json:"critical"`
	Target         string     `json:"target"`
	GrantTarget    string     `json:"grant_target"`
	Autonomy       string     `json:"autonomy"`
	Channel        string     `json:"channel"`
	SenderID       string     `json:"sender_id"`
	SessionID      string     `json:"session_id,omitempty"`
	Intent         string     `json:"intent"`
	Executor       string     `json:"executor"`
	Summary        string     `json:"summary"`
	ArgKeys        []string   `json:"arg_keys"`
	DecidedBy      string     `json:"decided_by"`
	DecidedAt      *time.Time `json:"decided_at"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	GrantID        *int64     `json:"grant_id"`
	GrantExpiresAt *time.Time `json:"grant_expires_at"`
	// Note is the owner's reply to the card, if any.
	Note  string `json:"note"`
	Trace []Step `json:"trace"`
	// TokenID and TokenName name the child token the request was made
	// with (empty for the agent's own token).
	TokenID   string `json:"token_id,omitempty"`
	TokenName string `json:"token_name,omitempty"`
	// Quorum is how many distinct approvers must allow; Approvals are the
	// decisions counted so far.
	Quorum int `json:"quorum"`
	// StepUp is "passkey" when each allow needs the approver's passkey on
	// the web page (the route's step_up); "" for a tap.
	StepUp    string     `json:"step_up,omitempty"`
	Approvals []Approval `json:"approvals"`
	// Raw is the request object exactly as the gateway sent it, including
	// fields this version of the client does not know.
	Raw json.RawMessage `json:"-"`
}

// Approval is one person's decision counted on a request.
type Approval struct {
	By       string    `json:"by"`
	Approver string    `json:"approver"`
	Decision string    `json:"decision"`
	Channel  string    `json:"channel"`
	At       time.Time `json:"at"`
}

// Allowed reports whether the agent may act.
func (r Request) Allowed() bool { return r.Status == StatusAllowed }

// Finished reports whether the request has its final answer.
func (r Request) Finished() bool { return r.Status.Finished() }

// CheckResult is the answer of POST /v1/check: what policy would say now,
// with nothing stored and no card sent.
type CheckResult struct {
	Outcome   string   `json:"outcome"` // allowed, denied or approval_required
	Reason    string   `json:"reason"`
	Autonomy  string   `json:"autonomy"`
	BlockedBy string   `json:"blocked_by"`
	GrantID   *int64   `json:"grant_id"`
	Vaglio    *Verdict `json:"vaglio"`
	Trace     []Step   `json:"trace"`
}

// Check asks what policy would say about r, storing nothing.
func (c *Client) Check(ctx context.Context, r Req) (CheckResult, error) {
	var out CheckResult
	_, err := c.do(ctx, http.MethodPost, "/v1/check", r, &out)
	return out, err
}

// Capability is one line of Capabilities: what a request for the
// capability gets at the agent's ceiling, before any target is known
// ("allowed", "approval_required" or "denied").
type Capability struct {
	Name            string   `json:"name"`
	Outcome         string   `json:"outcome"`
	Critical        bool     `json:"critical"`
	TargetKind      string   `json:"target_kind"`
	DefaultApproval string   `json:"default_approval"`
	Targets         []string `json:"targets,omitempty"` // a child token's targets for it, if limited
}

// Capabilities asks what this agent may use (GET /v1/capabilities): every
// capability with its outcome at the agent's ceiling, after its profile
// and any capability-wide block. Denied ones are left out unless
// includeBlocked.
func (c *Client) Capabilities(ctx context.Context, includeBlocked bool) ([]Capability, error) {
	var out struct {
		Capabilities []Capability `json:"capabilities"`
	}
	path := "/v1/capabilities"
	if includeBlocked {
		path += "?include_blocked=true"
	}
	_, err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out.Capabilities, err
}

// Request posts an approval_required event and waits up to wait for its
// answer. Policy usually answers at once; when a person must decide, it
// long-polls until the request is finished or wait has passed, and then
// returns the request still pending (wait 0 returns at once). The request
// is not withdrawn when the wait runs out: call Cancel for that, or Get to
// keep waiting.
//
// Errors are *APIError when the gateway refused (bad input, bad token,
// rate limited), or wrap ErrUnreachable. Once the request exists, a
// connection lost during the wait is retried until wait runs out.
func (c *Client) Request(ctx context.Context, r Req, wait time.Duration) (Request, error) {
	deadline := time.Now().Add(wait)
	var req Request
	if _, err := c.do(ctx, http.MethodPost, "/v1/requests"+waitQuery(wait), r, &req); err != nil {
		return req, err
	}
	if req.Finished() {
		return req, nil
	}
	return c.wait(ctx, req, deadline)
}

// Get returns a request, long-polling up to wait until it is finished.
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (Request, error) {
	deadline := time.Now().Add(wait)
	var req Request
	if _, err := c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(id)+waitQuery(wait), nil, &req); err != nil {
		return req, err
	}
	if req.Finished() {
		return req, nil
	}
	return c.wait(ctx, req, deadline)
}

// wait long-polls req until it is finished or deadline passes, retrying
// lost connections with backoff: the request survives a gateway restart,
// and so does the wait.
func (c *Client) wait(ctx context.Context, req Request, deadline time.Time) (Request, error) {
	backoff := 250 * time.Millisecond
	for !req.Finished() {
		left := time.Until(deadline)
		if left <= 0 {
			return req, nil
		}
		var next Request
		_, err := c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(req.ID)+waitQuery(left), nil, &next)
		switch {
		case err == nil:
			req, backoff = next, 250*time.Millisecond
			continue
		case ctx.Err() != nil, !retryable(err):
			return req, err
		}
		select {
		case <-ctx.Done():
			return req, err
		case <-time.After(min(backoff, max(time.Until(deadline), 0))):
		}
		if time.Now().After(deadline) {
			return req, err
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return req, nil
}

// retryable: the gateway could not be reached or is restarting.
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.StatusCode == http.StatusBadGateway || ae.StatusCode == http.StatusServiceUnavailable ||
			ae.StatusCode == http.StatusGatewayTimeout
	}
	return errors.Is(err, ErrUnreachable)
}

// Hook hands one hook event of a coding agent, exactly as the agent
// wrote it, to the gateway's POST /v1/hooks/{agent} (agent "claude-code"),
// and returns the answer the agent should read, as the gateway wrote it.
// The gateway maps the event with its own [hooks] settings (tools map,
// unknown_tool, wait), asks, and holds the answer while a person decides:
// up to its configured wait, or up to wait when that is shorter (0 means
// the gateway's). The call is one request held open: cancelling ctx (or
// the connection dropping) makes the gateway withdraw the request.
//
// Errors are *APIError (bad token) or wrap ErrUnreachable; the answer
// itself is never an error, whatever it decides.
func (c *Client) Hook(ctx context.Context, agent string, event []byte, wait time.Duration) ([]byte, error) {
	q := ""
	if wait > 0 {
		q = "?wait=" + url.QueryEscape(wait.String())
	}
	var out json.RawMessage
	_, err := c.do(ctx, http.MethodPost, "/v1/hooks/"+url.PathEscape(agent)+q, json.RawMessage(event), &out)
	return out, err
}

// Cancel withdraws a pending request: it becomes cancelled and its cards
// say so. A request that is already finished gives an *APIError with
// StatusCode 409 whose Request says how it ended.
func (c *Client) Cancel(ctx context.Context, id string) (Request, error) {
	var req Request
	_, err := c.do(ctx, http.MethodDelete, "/v1/requests/"+url.PathEscape(id), nil, &req)
	return req, err
}

// Decide records a decision (AllowOnce, AllowAlways or Deny) on a pending
// request. Only admin agents may: the others get a 403 *APIError.
func (c *Client) Decide(ctx context.Context, id, decision string) (Request, error) {
	var req Request
	_, err := c.do(ctx, http.MethodPost, "/v1/requests/"+url.PathEscape(id)+"/decision",
		map[string]string{"decision": decision}, &req)
	return req, err
}

func waitQuery(wait time.Duration) string {
	if wait <= 0 {
		return ""
	}
	return "?wait=" + url.QueryEscape(min(wait, maxPoll).String())
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("gateway URL %q: %w", c.BaseURL, err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Traceparent != "" {
		hr.Header.Set("traceparent", c.Traceparent)
		if c.Tracestate != "" {
			hr.Header.Set("tracestate", c.Tracestate)
		}
	}
	return hr, nil
}

// do makes one call and decodes a 2xx answer into out. A *Request out
// also keeps the raw JSON.
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	hr, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return 0, err
	}
	resp, err := c.httpClient().Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, ctx.Err()
		}
		return resp.StatusCode, fmt.Errorf("%w: reading the answer: %w", ErrUnreachable, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, typedError(apiError(resp, b))
	}
	if err := decode(b, out); err != nil {
		return resp.StatusCode, fmt.Errorf("gateway answered %s with unreadable JSON: %w", resp.Status, err)
	}
	return resp.StatusCode, nil
}

func decode(b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return err
	}
	if r, ok := out.(*Request); ok {
		r.Raw = json.RawMessage(bytes.TrimSpace(b))
	}
	return nil
}

// Simulate replays the gateway's stored requests under a changed policy
// (POST /v1/policy/simulate, admin agents only): body is the endpoint's
// JSON ({"since","add_rules","remove_rules","levels"}); the answer is
// returned as the gateway wrote it.
func (c *Client) Simulate(ctx context.Context, body any) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := c.do(ctx, http.MethodPost, "/v1/policy/simulate", body, &out)
	return out, err
}

// Suggestions lists the approve rules the gateway proposes from what
// people allowed (GET /v1/policy/suggestions, admin agents only), each as
// the gateway wrote it.
func (c *Client) Suggestions(ctx context.Context, since string, minCount int) ([]json.RawMessage, error) {
	var out struct {
		Suggestions []json.RawMessage `json:"suggestions"`
	}
	q := url.Values{"since": {since}, "min": {strconv.Itoa(minCount)}}
	_, err := c.do(ctx, http.MethodGet, "/v1/policy/suggestions?"+q.Encode(), nil, &out)
	return out.Suggestions, err
}
