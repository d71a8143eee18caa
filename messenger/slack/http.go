package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/metnos/gateway/messenger"
	slackapi "github.com/slack-go/slack"
)

// writeError answers in the gateway's error shape (SPEC §7). Slack shows
// none of it to users; it is for whoever debugs the app's request log.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// verified reads the raw body (at most messenger.MaxBodyBytes) and checks
// Slack's v0 signature over it with the signing secret, before anything
// parses it (https://docs.slack.dev/authentication/verifying-requests-from-slack).
// A request with a timestamp more than five minutes off, or a bad
// signature, gets 401. It writes the error answer itself.
func (m *Messenger) verified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, messenger.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "body over 64 KiB")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad_body", "could not read the body")
		return nil, false
	}
	sv, err := slackapi.NewSecretsVerifier(r.Header, m.cfg.SigningSecret)
	if err == nil {
		_, _ = sv.Write(raw)
		err = sv.Ensure()
	}
	if err != nil {
		m.log.Warn("refused a request with a bad Slack signature", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusUnauthorized, "bad_signature",
			"missing, stale or bad X-Slack-Signature / X-Slack-Request-Timestamp")
		return nil, false
	}
	return raw, true
}

func bodyKey(raw []byte) string {
	h := sha256.Sum256(raw)
	return "body:" + hex.EncodeToString(h[:])
}

// interactions is POST /slack/interactions: button clicks on cards and on
// the Home tab. Verified, deduplicated, acknowledged at once; the decision
// happens after the answer.
func (m *Messenger) interactions(w http.ResponseWriter, r *http.Request) {
	raw, ok := m.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(raw))
	var ic slackapi.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &ic)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_payload", "the payload form field is not an interaction payload")
		return
	}
	if !m.replays.FirstTime(r.Context(), bodyKey(raw), interactionKey(ic)) {
		m.log.Warn("ignored a replayed Slack interaction", "user_id", ic.User.ID)
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusOK)
	m.goJob(func(ctx context.Context) { m.handleInteraction(ctx, ic) })
}

// commands is POST /slack/commands: the /approvals slash command.
func (m *Messenger) commands(w http.ResponseWriter, r *http.Request) {
	raw, ok := m.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_form", "the body is not a form")
		return
	}
	cmd := slackapi.SlashCommand{
		TeamID: form.Get("team_id"), ChannelID: form.Get("channel_id"), UserID: form.Get("user_id"),
		UserName: form.Get("user_name"), Command: form.Get("command"), Text: form.Get("text"),
		ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"),
	}
	if !m.replays.FirstTime(r.Context(), bodyKey(raw), commandKey(cmd)) {
		m.log.Warn("ignored a replayed Slack command", "user_id", cmd.UserID)
		w.WriteHeader(http.StatusOK)
		return
	}
	// An empty 200 shows nothing; the answer follows on the response_url.
	w.WriteHeader(http.StatusOK)
	m.goJob(func(ctx context.Context) { m.handleCommand(ctx, cmd) })
}

// eventEnvelope is the part of an Events API request we read.
type eventEnvelope struct {
	Type      string          `json:"type"`
	Challenge string          `json:"challenge"`
	EventID   string          `json:"event_id"`
	TeamID    string          `json:"team_id"`
	Event     json.RawMessage `json:"event"`
}

// events is POST /slack/events: the url_verification handshake Slack does
// when the Request URL is saved, and app_home_opened.
func (m *Messenger) events(w http.ResponseWriter, r *http.Request) {
	raw, ok := m.verified(w, r)
	if !ok {
		return
	}
	var env eventEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		writeError(w, http.StatusBadRequest, "bad_event", "the body is not an Events API request")
		return
	}
	switch env.Type {
	case "url_verification":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, env.Challenge)
		return
	case "event_callback":
	default:
		w.WriteHeader(http.StatusOK)
		return
	}
	// Slack retries an event it thinks we missed; event_id is the same.
	if !m.replays.FirstTime(r.Context(), bodyKey(raw), eventKey(env.EventID)) {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusOK)
	if m.ourTeam(r.Context(), env.TeamID) {
		m.handleEvent(env.Event)
	}
}
