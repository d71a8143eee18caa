package web

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web/push"
)

// Push is the web page's Web Push: the VAPID keys, the users' devices,
// the notifications' one-time action tokens, and the notifier the card
// dispatcher drives (approvals.ChannelWebPush).
type Push struct {
	keys     push.Keys
	store    *push.Store
	actions  *push.Actions
	notifier *push.Notifier
}

// PushOptions are what NewPush takes beside the config and the database.
type PushOptions struct {
	Now func() time.Time
	// Services are more Web Push services a browser's subscription may
	// name (push.NewStore); Client posts the messages (nil: the default).
	Services []string
	Client   *http.Client
	Logger   *slog.Logger
	Observer push.Observer
}

// NewPush loads (on first start, makes) the VAPID key pair and builds the
// notifier.
func NewPush(ctx context.Context, cfg config.Config, db *storage.DB, o PushOptions) (*Push, error) {
	keys, err := push.LoadKeys(ctx, db, o.Now())
	if err != nil {
		return nil, err
	}
	store := push.NewStore(db, o.Now, o.Services...)
	actions := push.NewActions(db, o.Now)
	n := push.New(db, store, actions, push.Options{Keys: keys, Subscriber: vapidSubject(cfg), HTTPClient: o.Client,
		Locale: locale.New(locale.Lang(cfg.Web.Language), cfg.Server.Zone(), o.Now), Logger: o.Logger, Now: o.Now,
		Observer: o.Observer, UserExists: func(name string) bool { return WebUserExists(cfg, name) }})
	return &Push{keys: keys, store: store, actions: actions, notifier: n}, nil
}

// Notifier is the notifier the card dispatcher drives.
func (p *Push) Notifier() *push.Notifier { return p.notifier }

// vapidSubject is the VAPID JWT's "sub": web.public_url when it is https
// (Apple's push service wants a reachable contact), else an address at
// this host (webpush-go makes it a mailto:).
func vapidSubject(cfg config.Config) string {
	if strings.HasPrefix(cfg.Web.PublicURL, "https://") {
		return strings.TrimRight(cfg.Web.PublicURL, "/")
	}
	return "admin@localhost"
}

// pushActor is the web user a notification action decides as.
func pushActor(user string) approvals.Actor {
	return approvals.Actor{Channel: approvals.ChannelWeb, ID: user, Name: user}
}

// pushRoutes mounts the Web Push endpoints of the web page: subscribing
// and unsubscribing a browser (a session and its CSRF token), and the
// notification actions (the one-time token is the credential: a locked
// phone has no session).
func (w *web) pushRoutes(mux *http.ServeMux) {
	type hf = http.HandlerFunc
	mux.Handle("POST /web/push/subscribe", w.access(w.csrf(hf(w.pushSubscribe))))
	mux.Handle("POST /web/push/unsubscribe", w.access(w.csrf(hf(w.pushUnsubscribe))))
	mux.HandleFunc("POST /web/push/act", w.pushAct)
}
