package messenger

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// Options are what the gateway gives an adapter besides its own section;
// all are optional. An adapter's own options embed them.
type Options struct {
	// Logger receives the adapter's log lines (never a token).
	Logger *slog.Logger
	// HTTPClient makes every call to the platform. Default (WithDefaults):
	// a client with a 30 s timeout and a transport of its own.
	HTTPClient *http.Client
	// Location is the time zone of the times written into card text; nil
	// means time.Local.
	Location *time.Location
	// Now is the clock (the "in 9 min" of an expiry); nil means time.Now.
	Now func() time.Time
	// Rules is the rule store the adapter's commands list (and may
	// change); default: the host's (FromHost).
	Rules *policy.RuleStore
	// Backoff is the first pause before the adapter's connection is
	// opened again after a failure; it doubles up to a minute. Default one
	// second.
	Backoff time.Duration
	// PublicURL is web.public_url: a card that had to cut a field links
	// to the request's page under it.
	PublicURL string
	// LinkBase is the gateway's link base (gateway.LinkBase): a step-up
	// card's Confirm on the web page goes to the request's page under it.
	LinkBase string
	// Dialer opens the platform's websocket, for an adapter that holds
	// one (Slack's Socket Mode, Discord's gateway); default: its
	// library's.
	Dialer *websocket.Dialer
}

// WithDefaults is o with every unset option at its default.
func (o Options) WithDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second,
			Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	return o
}

// FromHost is o with the host's rule store when o names none (host is
// nil when an adapter is built alone).
func (o Options) FromHost(host Host) Options {
	if o.Rules == nil && host != nil {
		o.Rules = host.Rules()
	}
	return o
}

// Card is the neutral card of r in l, linked to its web page and, for a
// step-up, to where it is confirmed.
func (o Options) Card(r approvals.Request, l locale.Locale) cards.Card {
	return cards.New(r, l).WithPage(o.PublicURL).WithConfirm(o.LinkBase)
}

// Set is ids as a set, for approver and admin lookups.
func Set(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}
