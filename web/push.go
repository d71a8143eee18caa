package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/web/push"
)

// pushSubscribe is POST /web/push/subscribe: Turn on notifications sends
// this browser's PushSubscription (endpoint, keys) for the logged-in user.
func (w *web) pushSubscribe(rw http.ResponseWriter, r *http.Request) {
	if w.s.push == nil {
		writeError(rw, http.StatusNotFound, "not_found", "Web Push is not available")
		return
	}
	user := sessionOf(r).User
	sub, err := w.s.push.store.Add(r.Context(), user, push.Subscription{Endpoint: r.PostFormValue("endpoint"),
		P256dh: r.PostFormValue("p256dh"), Auth: r.PostFormValue("auth"), Device: r.PostFormValue("device")})
	switch {
	case errors.Is(err, push.ErrInvalid) || errors.Is(err, push.ErrTooMany):
		writeError(rw, http.StatusBadRequest, "invalid_subscription", err.Error())
		return
	case err != nil:
		w.s.log.Error("web push: subscribe", "user", user, "err", err)
		writeError(rw, http.StatusInternalServerError, "internal", "the subscription was not saved")
		return
	}
	w.s.log.Info("web push: device subscribed", "user", user, "subscription", sub.ID)
	writeJSON(rw, http.StatusOK, map[string]string{"id": sub.ID})
}

// pushUnsubscribe is POST /web/push/unsubscribe: Turn off, for one of
// the user's devices (id, from the list) or this browser (endpoint). No
// push reaches that device afterwards.
func (w *web) pushUnsubscribe(rw http.ResponseWriter, r *http.Request) {
	rw = backTo{rw, "/account"}
	if w.s.push == nil {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.push_none")})
		return
	}
	user := sessionOf(r).User
	id, endpoint := r.PostFormValue("id"), r.PostFormValue("endpoint")
	if id == "" && endpoint == "" {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.push_none")})
		return
	}
	removed, err := w.s.push.store.Remove(r.Context(), user, id, endpoint)
	switch {
	case err != nil:
		w.s.log.Error("web push: unsubscribe", "user", user, "err", err)
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.internal")})
	case !removed:
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.push_none")})
	default:
		w.s.log.Info("web push: device turned off", "user", user)
		w.redirect(rw, r, flash{Text: w.loc.T("web.push_off")})
	}
}

// pushAct is POST /web/push/act: Allow once or Deny on a notification.
// The service worker posts the one-time token that came in the encrypted
// payload; it is the only credential (a locked phone has no session), so
// it names one request at one revision, one web user and one decision,
// works once, and for a short while. The decision then takes the same
// checks as a tap on the page: an approver of the request, the route's
// step-up (never offered by a push; refused here too), the quorum.
func (w *web) pushAct(rw http.ResponseWriter, r *http.Request) {
	if w.s.push == nil {
		writeError(rw, http.StatusNotFound, "not_found", "Web Push is not available")
		return
	}
	if !w.readForm(rw, r) {
		return
	}
	act, err := w.s.push.actions.Spend(r.Context(), r.PostForm.Get("token"))
	if err != nil {
		if !errors.Is(err, push.ErrActionRefused) {
			w.s.log.Error("web push: action", "err", err)
		}
		writeError(rw, http.StatusGone, "action_refused", push.ErrActionRefused.Error())
		return
	}
	req, err := w.s.svc.Get(r.Context(), act.RequestID)
	switch {
	case err != nil:
		writeError(rw, http.StatusGone, "action_refused", push.ErrActionRefused.Error())
		return
	case req.Status != approvals.StatusPending || req.Rev != act.Rev:
		writeError(rw, http.StatusConflict, "action_stale", push.ErrActionStale.Error())
		return
	case req.StepUp != "" || !WebUserExists(w.s.cfg, act.User):
		writeError(rw, http.StatusForbidden, "forbidden", "this request cannot be decided from a notification")
		return
	}
	by := pushActor(act.User)
	req, err = w.s.svc.DecideChoice(r.Context(), act.RequestID, approvals.Choice{Decision: act.Decision}, by)
	if err != nil {
		text, expected := cards.Refusal(err, w.loc)
		if !expected {
			w.s.log.Error("web push: decide", "request_id", act.RequestID, "err", err)
		}
		writeError(rw, http.StatusConflict, "not_decided", text)
		return
	}
	w.s.log.Info("decided from a notification", "request_id", req.ID, "user", act.User, "decision", string(act.Decision))
	writeJSON(rw, http.StatusOK, map[string]string{"id": req.ID, "status": string(req.Status),
		"text": cards.SafeIn(cards.StatusLine(req, w.loc), w.loc)})
}

// pushAccount is the Account page's Notifications section: the VAPID
// public key the browser subscribes with, and the user's devices.
type pushAccount struct {
	Key     string
	Devices []push.Subscription
}

// pushAccount reads user's devices; nil without Web Push. A failure
// shows no device (it is logged): the rest of the page matters more.
func (w *web) pushAccount(ctx context.Context, user string) *pushAccount {
	if w.s.push == nil {
		return nil
	}
	devices, err := w.s.push.store.List(ctx, user)
	if err != nil {
		w.s.log.Error("web push: list devices", "user", user, "err", err)
	}
	for i := range devices {
		devices[i].Device = cards.SafeIn(devices[i].Device, w.loc)
	}
	return &pushAccount{Key: w.s.push.keys.Public, Devices: devices}
}
