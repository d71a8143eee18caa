package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway/push"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/storage"
)

// webPush is the web page's Web Push: the VAPID keys, the users' devices,
// the notifications' one-time action tokens, and the notifier the card
// dispatcher drives (approvals.ChannelWebPush).
type webPush struct {
	keys     push.Keys
	store    *push.Store
	actions  *push.Actions
	notifier *push.Notifier
}

// newWebPush loads (on first start, makes) the VAPID key pair and builds
// the notifier.
func newWebPush(ctx context.Context, cfg config.Config, db *storage.DB, m *Metrics, o AppOptions) (*webPush, error) {
	keys, err := push.LoadKeys(ctx, db, o.Now())
	if err != nil {
		return nil, err
	}
	store := push.NewStore(db, o.Now, o.PushServices...)
	actions := push.NewActions(db, o.Now)
	n := push.New(db, store, actions, push.Options{Keys: keys, Subscriber: vapidSubject(cfg), HTTPClient: o.PushClient,
		Locale: locale.New(locale.Lang(cfg.Web.Language), cfg.Server.Zone(), o.Now), Logger: o.Logger, Now: o.Now,
		Observer: m, UserExists: func(name string) bool { return WebUserExists(cfg, name) }})
	return &webPush{keys: keys, store: store, actions: actions, notifier: n}, nil
}

// vapidSubject is the VAPID JWT's "sub": web.public_url when it is https
// (Apple's push service wants a reachable contact), else an address at
// this host (webpush-go makes it a mailto:).
func vapidSubject(cfg config.Config) string {
	if strings.HasPrefix(cfg.Web.PublicURL, "https://") {
		return strings.TrimRight(cfg.Web.PublicURL, "/")
	}
	return "admin@localhost"
}

// Pushed counts one Web Push by its outcome.
func (m *Metrics) Pushed(result string) { m.pushes.WithLabelValues(result).Inc() }

// pushActor is the web user a notification action decides as.
func pushActor(user string) approvals.Actor {
	return approvals.Actor{Channel: approvals.ChannelWeb, ID: user, Name: user}
}

// pushRoutes mounts the Web Push endpoints of the web page: subscribing
// and unsubscribing a browser (a session and its CSRF token), and the
// notification actions (the one-time token is the credential: a locked
// phone has no session).
func (s *Server) pushRoutes(mux *http.ServeMux) {
	w := s.web
	type hf = http.HandlerFunc
	mux.Handle("POST /web/push/subscribe", w.access(w.csrf(hf(w.pushSubscribe))))
	mux.Handle("POST /web/push/unsubscribe", w.access(w.csrf(hf(w.pushUnsubscribe))))
	mux.HandleFunc("POST /web/push/act", w.pushAct)
}
