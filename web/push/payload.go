package push

import (
	"context"
	"encoding/json"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
)

// maxPayload keeps a payload inside one aes128gcm record of 4,096 bytes
// with webpush-go's padding and header (86 bytes) and the tag (16).
const maxPayload = 3000

// Payload is the JSON a push carries to the service worker (sw.js). It
// names the request and shows what the card shows, cut short; Actions
// carry the one-time tokens of Allow once and Deny, only while the
// request is pending and needs no step-up. No argument value, no agent
// token, no secret is ever in it.
type Payload struct {
	V          int      `json:"v"`
	ID         string   `json:"id"`
	Tag        string   `json:"tag"` // the request id: a later push replaces the notification
	Title      string   `json:"title"`
	Body       string   `json:"body"`
	URL        string   `json:"url"` // the request's page, /r/{id}
	Status     string   `json:"status"`
	Agent      string   `json:"agent"`
	Capability string   `json:"capability"`
	Target     string   `json:"target"`
	ExpiresAt  string   `json:"expires_at"`
	Actions    []Button `json:"actions,omitempty"`
}

// Button is a notification action with its token.
type Button struct {
	Action string `json:"action"` // "allow_once" or "deny"
	Title  string `json:"title"`
	Token  string `json:"token"`
}

// payload builds r's push for user's device: the actions' tokens are
// bound to user.
func (n *Notifier) payload(ctx context.Context, r approvals.Request, user string) ([]byte, error) {
	c := cards.NewPush(r, n.opts.Locale)
	p := Payload{V: 1, ID: r.ID, Tag: r.ID, Title: c.Title, Body: c.Body, URL: cards.RequestPath(r.ID),
		Status: string(r.Status), Agent: c.Agent, Capability: c.Capability, Target: c.Target, ExpiresAt: c.ExpiresAt}
	if r.Status == approvals.StatusPending && r.StepUp == "" {
		for _, b := range []struct {
			d     approvals.Decision
			title string
		}{{approvals.AllowOnce, c.AllowOnce}, {approvals.Deny, c.Deny}} {
			tok, err := n.actions.Issue(ctx, r, user, b.d)
			if err != nil {
				return nil, err
			}
			p.Actions = append(p.Actions, Button{Action: string(b.d), Title: b.title, Token: tok})
		}
	}
	js, err := json.Marshal(p)
	if err == nil && len(js) > maxPayload {
		p.Target, p.Agent = "", "" // the body still shows the target, cut
		js, err = json.Marshal(p)
	}
	return js, err
}
