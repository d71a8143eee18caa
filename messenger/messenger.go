// Package messenger is what the gateway and its chat adapters agree on: a
// Messenger (a Notifier for cards that also runs in the background and
// mounts HTTP routes), the Host the gateway lends it, and the work and
// replay memory every adapter needs. The adapters live in its
// subpackages (telegram, slack, discord) and import neither the gateway
// nor each other.
package messenger

import (
	"context"
	"net/http"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
)

// MaxBodyBytes bounds the body of a platform's webhook or interaction.
const MaxBodyBytes = 64 << 10

// Router mounts HTTP routes on the gateway's server.
type Router interface {
	Handle(pattern string, h http.Handler)
}

// Host is what the gateway lends a messenger while it is built: its
// server's routes and rule store.
type Host interface {
	Router
	Rules() *policy.RuleStore
}

// Messenger is a chat adapter: a Notifier for cards, plus whatever it runs
// in the background (long polling, Socket Mode) and the HTTP routes it
// needs (webhooks, interactivity).
type Messenger interface {
	approvals.Notifier
	// Routes mounts the messenger's HTTP endpoints, if any.
	Routes(r Router)
	// Run does the background work until ctx ends.
	Run(ctx context.Context) error
}

// Factory builds a messenger once the service exists; host is nil in
// tests that build one alone.
type Factory func(svc *approvals.Service, host Host) (Messenger, error)
