package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// The kinds of Event.
const (
	// EventRequired: one of the agent's requests is waiting for a person.
	EventRequired = "approval_required"
	// EventResolved: a request finished (allowed, denied, expired, cancelled).
	EventResolved = "approval_resolved"
	// EventProgress: an approval was counted on a request that needs more
	// than one approver; it is still pending (Approvals, Quorum).
	EventProgress = "approval_progress"
	// EventReconnected is made by the client, not sent by the gateway: the
	// stream was cut and is back. Events of the gap are lost (the gateway
	// keeps no backlog), so an agent with requests outstanding should Get
	// them now.
	EventReconnected = "reconnected"
)

// Stream timing: a dead connection is noticed when nothing, not even the
// gateway's 15-second heartbeat, arrived for eventIdle; reconnects back off
// from backoffFirst to backoffMax.
const (
	eventIdle    = 45 * time.Second
	backoffFirst = 250 * time.Millisecond
	backoffMax   = 10 * time.Second
)

// Event is one event of the agent's stream (GET /v1/events). For
// approval_required the Capability, Target, Command and ExpiresAt fields
// are set; for approval_resolved Decision, Status and Note. Command is the
// request's target (for code:exec the shell command), so an event-driven
// agent can match the event to the call it is holding by CallID or by
// Command.
type Event struct {
	Kind       string    `json:"-"`
	ID         string    `json:"id"`
	CallID     string    `json:"call_id"`
	Capability string    `json:"capability,omitempty"`
	Target     string    `json:"target,omitempty"`
	Command    string    `json:"command,omitempty"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Decision   string    `json:"decision,omitempty"`
	Status     Status    `json:"status,omitempty"`
	Note       string    `json:"note,omitempty"`
	// Approvals and Quorum: approval_progress.
	Approvals []Approval `json:"approvals,omitempty"`
	Quorum    int        `json:"quorum,omitempty"`
	// Data is the event's JSON as the gateway sent it.
	Data json.RawMessage `json:"-"`
}

// Events subscribes to the agent's event stream (an admin agent's stream
// carries every agent's events). The first connection is made before
// Events returns, so a bad token or an unreachable gateway is an error
// here. After that the stream reconnects by itself, with backoff, whenever
// it is cut (a restart, a proxy, a dead connection noticed by the missing
// heartbeat) and says so with an EventReconnected event. It keeps trying,
// at most every 10 s, whatever the failure (the gateway down, or an error
// answer such as 401 after a token change). The channel is closed when
// ctx ends.
func (c *Client) Events(ctx context.Context) (<-chan Event, error) {
	resp, err := c.openStream(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 16)
	go c.follow(ctx, resp, ch)
	return ch, nil
}

// openStream makes one GET /v1/events and checks it is a stream.
func (c *Client) openStream(ctx context.Context) (*http.Response, error) {
	hr, err := c.newRequest(ctx, http.MethodGet, "/v1/events", nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	resp, err := c.httpClient().Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b := make([]byte, 64<<10)
		n, _ := resp.Body.Read(b)
		return nil, apiError(resp, b[:n])
	}
	return resp, nil
}

// follow reads streams one after the other until ctx ends.
func (c *Client) follow(ctx context.Context, resp *http.Response, ch chan<- Event) {
	defer close(ch)
	backoff := backoffFirst
	for {
		start := time.Now()
		c.read(ctx, resp, ch)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > backoffMax {
			backoff = backoffFirst // it was a healthy stream: reconnect fast
		}
		for {
			d := backoff/2 + rand.N(backoff/2+1)
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
			backoff = min(backoff*2, backoffMax)
			var err error
			if resp, err = c.openStream(ctx); err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
		}
		select {
		case ch <- Event{Kind: EventReconnected}:
		case <-ctx.Done():
			resp.Body.Close()
			return
		}
	}
}

// read delivers the events of one stream until it ends, ctx ends, or it
// stays silent for eventIdle.
func (c *Client) read(ctx context.Context, resp *http.Response, ch chan<- Event) {
	defer resp.Body.Close()
	idle := time.AfterFunc(eventIdle, func() { resp.Body.Close() })
	defer idle.Stop()
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var kind string
	var data []string
	for sc.Scan() {
		idle.Reset(eventIdle)
		line := sc.Text()
		switch {
		case line == "":
			if kind != "" || len(data) > 0 {
				if e, ok := parseEvent(kind, strings.Join(data, "\n")); ok {
					select {
					case ch <- e:
					case <-ctx.Done():
						return
					}
				}
			}
			kind, data = "", nil
		case strings.HasPrefix(line, ":"): // a comment: the heartbeat
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

func parseEvent(kind, data string) (Event, bool) {
	var e Event
	if kind == "" {
		kind = "message"
	}
	if data != "" {
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return Event{}, false
		}
		e.Data = json.RawMessage(data)
	}
	e.Kind = kind
	return e, true
}
