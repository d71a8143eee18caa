package discord_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/discord/discordtest"
)

// TestDiscord_Digest: the digest of [approvals] digest, triggered directly
// (the scheduler's own test runs a job on it), reaches the fake Discord as
// one plain message in the cards' channel, with allowed_mentions
// {"parse": []} (the fake refuses it otherwise): the day's counts, the top
// suggestion with a target that tries to ping shown in a code span (no
// pill), and the link to the web page's Suggestions, clickable without an
// embed. A Discord that fails makes SendDigest's error name it.
func TestDiscord_Digest(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.cfg.Approvals.Digest = "0 18 * * *"
		h.cfg.Web.PublicURL = "https://gw.example.org/"
	})
	ask := func(target, decision string) {
		body := fsWrite(target)
		body["call_id"] = target
		st, b := h.api("POST", "/v1/requests", body)
		var r approvals.Request
		if err := json.Unmarshal(b, &r); err != nil || st >= 300 || r.Status != approvals.StatusPending {
			t.Fatalf("ask %s: %d %s", target, st, b)
		}
		if decision == "" {
			return
		}
		if st, b := h.apiAs(bossToken, "POST", "/v1/requests/"+r.ID+"/decision", map[string]any{"decision": decision}); st != 200 {
			t.Fatalf("decide %s: %d %s", target, st, b)
		}
	}
	for _, f := range []string{"a", "b", "c"} {
		ask("/srv/@everyone/<@123>/"+f+".csv", "allow_once")
	}
	ask("/srv/other/z.txt", "deny")
	ask("/srv/other/w.txt", "")
	// The waiting request's card is out: the 429 below is the digest's.
	h.fake.Await(t, waitFor, "the card of w.txt", func(s *discordtest.Server) bool {
		for _, m := range s.MessagesLocked(channelID) {
			if strings.Contains(m.Content, "`/srv/other/w.txt`") {
				return true
			}
		}
		return false
	})

	if err := h.app.SendDigest(context.Background()); err != nil {
		t.Fatal(err)
	}
	digests := func() []discordtest.Message {
		var out []discordtest.Message
		for _, m := range h.fake.Messages(channelID) {
			if strings.Contains(m.Content, "Approvals digest") {
				out = append(out, m)
			}
		}
		return out
	}
	ds := digests()
	if len(ds) != 1 {
		t.Fatalf("%d digests on Discord, want 1", len(ds))
	}
	d := ds[0]
	for _, want := range []string{"Asked\\: 5 · allowed 3 · denied 1 · expired 0 · still pending 1",
		"`/srv/@everyone/<@123>/*.csv`", "allowed 3 times", "<https://gw.example.org/#suggestions>"} {
		if !strings.Contains(d.Content, want) {
			t.Errorf("the digest lacks %q:\n%s", want, d.Content)
		}
	}
	if len(d.Buttons()) != 0 || d.Reference != "" {
		t.Errorf("the digest has buttons %q or replies to %q", d.Buttons(), d.Reference)
	}
	noMentionsAnywhere(t, h)

	h.fake.RateLimit("messages.create", 30*time.Second) // the library does not wait: the error comes back
	if err := h.app.SendDigest(context.Background()); err == nil || !strings.Contains(err.Error(), "digest on discord") {
		t.Errorf("a failing Discord: %v", err)
	}
}
