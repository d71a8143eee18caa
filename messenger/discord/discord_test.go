package discord_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger/discord"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/policy"
)

// modes runs a test in both ways of receiving taps.
func modes(t *testing.T, f func(t *testing.T, opts ...harnessOption)) {
	t.Run("gateway", func(t *testing.T) { f(t) })
	t.Run("http", func(t *testing.T) { f(t, httpMode) })
}

// noMentionsAnywhere checks every message the gateway wrote: the fake
// refused any without allowed_mentions {"parse": []}, and none draws a pill.
func noMentionsAnywhere(t *testing.T, h *harness) {
	t.Helper()
	for _, c := range h.fake.History() {
		if c.Status == 400 && strings.Contains(c.Error, "allowed_mentions") {
			t.Errorf("%s %s was sent without allowed_mentions {\"parse\": []}", c.Method, c.Path)
		}
	}
	for _, m := range h.fake.Messages(channelID) {
		if p := discordtest.Pills(m.Content); len(p) > 0 {
			t.Errorf("message %s draws %q:\n%s", m.ID, p, m.Content)
		}
	}
}

func TestDiscord_AllowOnce(t *testing.T) {
	modes(t, func(t *testing.T, opts ...harnessOption) {
		h := newHarness(t, opts...)
		res := h.submit(fsWrite("/srv/reports/q3.txt"), "30s")
		id, card := h.cardN(1)
		if !strings.Contains(card.Content, "`/srv/reports/q3.txt`") {
			t.Errorf("card does not show the target:\n%s", card.Content)
		}
		if got := card.Labels(); len(got) < 3 || got[0] != cards.LabelAllowOnce || got[len(got)-1] != cards.LabelDeny {
			t.Errorf("labels %q", got)
		}
		for _, b := range card.Buttons() {
			if !strings.HasSuffix(b, ":"+id) || len(b) > discord.DiscordMaxCustomID {
				t.Errorf("custom_id %q: want the request id and the choice only", b)
			}
		}
		// A stranger's tap is refused privately and changes nothing.
		h.tap(discordtest.Interaction{UserID: strangerID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
		h.ephemeralWith("You are not an approver")
		if r := h.get(id); r.Status != approvals.StatusPending {
			t.Fatalf("a stranger's tap changed the request: %s", r.Status)
		}
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
		got := waitAgent(t, res)
		if got.status != http.StatusOK || got.req.Status != approvals.StatusAllowed {
			t.Fatalf("agent got %d %s", got.status, got.req.Status)
		}
		if !strings.HasPrefix(got.req.DecidedBy, "discord:") || !strings.Contains(got.req.DecidedBy, approverID) {
			t.Errorf("decided_by %q", got.req.DecidedBy)
		}
		h.fake.Await(t, waitFor, "the card's edit", func(s *discordtest.Server) bool {
			m, _ := s.MessageLocked(card.ID)
			return m.Edits > 0 && len(m.Buttons()) == 0 && strings.Contains(m.Content, "Allowed once")
		})
		noMentionsAnywhere(t, h)
	})
}

func TestDiscord_HTTP_Signatures(t *testing.T) {
	h := newHarness(t, httpMode)
	res := h.submit(fsWrite("/srv/a.txt"), "30s")
	id, card := h.cardN(1)
	tap := discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)}
	body, _, token := h.fake.Payload(tap)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	future := strconv.FormatInt(time.Now().Add(6*time.Minute).Unix(), 10)
	forged := []byte(strings.Replace(string(body), approverID, strangerID, 1))
	for _, c := range []struct {
		name    string
		body    []byte
		ts, sig string
	}{
		{"no signature", body, now, ""},
		{"no timestamp", body, "", h.fake.Sign(now, body)},
		{"bad hex", body, now, "zz"},
		{"signed other body", forged, now, h.fake.Sign(now, body)},
		{"signed other time", body, now, h.fake.Sign(stale, body)},
		{"stale", body, stale, h.fake.Sign(stale, body)},
		{"future", body, future, h.fake.Sign(future, body)},
	} {
		st, out, err := h.fake.PostSigned(h.client, h.base+"/discord/interactions", c.body, "", c.ts, c.sig)
		if err != nil || st != http.StatusUnauthorized {
			t.Errorf("%s: answered %d %s (%v); want 401", c.name, st, out, err)
			continue
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if json.Unmarshal(out, &e) != nil || e.Error.Code != "bad_signature" {
			t.Errorf("%s: body %s; want the API's error shape with bad_signature", c.name, out)
		}
	}
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("a refused interaction decided: %s", r.Status)
	}
	// PING is answered with PONG.
	ping := []byte(`{"id":"1","application_id":"` + appID + `","type":1,"token":"p","version":1}`)
	st, out, _ := h.fake.PostSigned(h.client, h.base+"/discord/interactions", ping, "", now, h.fake.Sign(now, ping))
	if st != 200 || !strings.Contains(string(out), `"type":1`) {
		t.Errorf("PING: %d %s", st, out)
	}
	// The genuine one decides; the same one again is refused.
	if st, out, _ := h.fake.PostSigned(h.client, h.base+"/discord/interactions", body, token, now, h.fake.Sign(now, body)); st != 200 {
		t.Fatalf("genuine: %d %s", st, out)
	}
	if got := waitAgent(t, res); got.req.Status != approvals.StatusAllowed {
		t.Fatalf("status %s", got.req.Status)
	}
	_, out, _ = h.fake.PostSigned(h.client, h.base+"/discord/interactions", body, "", now, h.fake.Sign(now, body))
	if !strings.Contains(string(out), "already handled") {
		t.Errorf("replayed interaction answered %s", out)
	}
	// Remembered under Discord's name in the replays table.
	var ours, others int
	ctx := context.Background()
	if err := h.app.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM replays WHERE messenger = 'discord'`).Scan(&ours); err != nil || ours != 1 {
		t.Errorf("replays holds %d rows of discord (%v), want 1", ours, err)
	}
	if err := h.app.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM replays WHERE messenger <> 'discord'`).Scan(&others); err != nil || others != 0 {
		t.Errorf("replays holds %d rows of other messengers (%v), want 0", others, err)
	}
}

func TestDiscord_RefusedTaps(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/one.txt"), "30s")
	id1, card1 := h.cardN(1)
	h.submit(fsWrite("/srv/two.txt"), "30s")
	_, card2 := h.cardN(2)
	allow := cards.EncodeDecision(id1, approvals.AllowOnce)
	for _, c := range []struct {
		name string
		in   discordtest.Interaction
		want string
	}{
		{"custom_id carried to another card", discordtest.Interaction{UserID: approverID, MessageID: card2.ID, CustomID: allow}, "does not belong"},
		{"edited custom_id", discordtest.Interaction{UserID: approverID, MessageID: card1.ID, CustomID: "v1:x:" + id1}, "not a button"},
		{"other channel", discordtest.Interaction{UserID: approverID, MessageID: card1.ID, CustomID: allow, ChannelID: "1100000000000000099"}, "own server and channel"},
		{"other guild", discordtest.Interaction{UserID: approverID, MessageID: card1.ID, CustomID: allow, GuildID: "1100000000000000098"}, "own server and channel"},
		{"DM", discordtest.Interaction{UserID: approverID, MessageID: card1.ID, CustomID: allow, DM: true}, "own server and channel"},
	} {
		_, token := h.fake.Tap(t, c.in)
		h.fake.Await(t, waitFor, c.name+": its answer", func(s *discordtest.Server) bool {
			for _, call := range s.CallsLocked("interaction.callback") {
				if strings.Contains(call.Path, token) {
					return true
				}
			}
			return false
		})
		h.ephemeralWith(c.want)
	}
	if r := h.get(id1); r.Status != approvals.StatusPending {
		t.Fatalf("a refused tap decided: %s", r.Status)
	}
}

func TestDiscord_AllowAlwaysScopes(t *testing.T) {
	modes(t, func(t *testing.T, opts ...harnessOption) {
		h := newHarness(t, opts...)
		res := h.submit(fsWrite("/srv/reports/2026/q3.txt"), "30s")
		id, card := h.cardN(1)
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: customID(t, card, "v1:m:")})
		var menu discordtest.Message
		h.fake.Await(t, waitFor, "the scope buttons", func(s *discordtest.Server) bool {
			menu, _ = s.MessageLocked(card.ID)
			return strings.HasPrefix(menu.Buttons()[0], "v1:a0:")
		})
		scopes := h.get(id).Scopes
		if len(scopes) < 2 {
			t.Fatalf("scopes %v", scopes)
		}
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeScope(id, 1)})
		got := waitAgent(t, res)
		if got.req.Status != approvals.StatusAllowed || got.req.GrantID == nil {
			t.Fatalf("status %s grant %v", got.req.Status, got.req.GrantID)
		}
		gs, err := h.app.Service.Grants().List(context.Background(), policy.GrantFilter{})
		if err != nil || len(gs) != 1 || gs[0].Target != scopes[1] {
			t.Fatalf("grants %+v (%v); want one on %q", gs, err, scopes[1])
		}
	})
}

func TestDiscord_RateLimitStorm(t *testing.T) {
	modes(t, func(t *testing.T, opts ...harnessOption) {
		h := newHarness(t, opts...)
		h.fake.RateLimit("messages.create", 50*time.Millisecond, 80*time.Millisecond, 120*time.Millisecond)
		res := h.submit(fsWrite("/srv/storm.txt"), "60s")
		id, card := h.cardN(1)
		if n := len(h.fake.Calls("messages.create")); n != 4 {
			t.Errorf("%d creates; want 3 refused and 1 posted", n)
		}
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.Deny)})
		if got := waitAgent(t, res); got.req.Status != approvals.StatusDenied {
			t.Fatalf("status %s", got.req.Status)
		}
		h.fake.Await(t, waitFor, "the edit", func(s *discordtest.Server) bool { m, _ := s.MessageLocked(card.ID); return m.Edits > 0 })
		h.stop()
		h.start() // a restart posts the first card not again
		h.submit(fsWrite("/srv/after-restart.txt"), "0s")
		h.cardN(2)
		if n := len(h.fake.Messages(channelID)); n != 2 {
			t.Errorf("%d messages in the channel; want the two cards", n)
		}
	})
}

func TestDiscord_ResumeLosesNoTap(t *testing.T) {
	h := newHarness(t)
	res := h.submit(fsWrite("/srv/drop.txt"), "30s")
	id, card := h.cardN(1)
	_, ident, _ := h.fake.Counts()
	h.fake.Drop()
	// The tap happens while the connection is down: the RESUME gets it.
	h.fake.Tap(t, discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
	if got := waitAgent(t, res); got.req.Status != approvals.StatusAllowed {
		t.Fatalf("status %s", got.req.Status)
	}
	_, ident2, resumes := h.fake.Counts()
	if resumes < 1 || ident2 != ident {
		t.Errorf("resumes %d, identifies %d → %d; want a RESUME and no new IDENTIFY", resumes, ident, ident2)
	}
	// RECONNECT (op 7) resumes too; INVALID_SESSION (op 9) identifies again.
	res = h.submit(fsWrite("/srv/drop2.txt"), "30s")
	id2, card2 := h.cardN(2)
	h.fake.Reconnect()
	h.fake.Await(t, waitFor, "a second resume", func(s *discordtest.Server) bool { return len(s.CallsLocked("ws.resume")) >= 2 })
	h.fake.InvalidateSession()
	h.fake.Await(t, waitFor, "a new identify", func(s *discordtest.Server) bool { return len(s.CallsLocked("ws.identify")) > ident })
	h.fake.Await(t, waitFor, "the new session", func(s *discordtest.Server) bool { return s.ConnectedLocked() })
	h.fake.Tap(t, discordtest.Interaction{UserID: approverID, MessageID: card2.ID, CustomID: cards.EncodeDecision(id2, approvals.Deny)})
	if got := waitAgent(t, res); got.req.Status != approvals.StatusDenied {
		t.Fatalf("status %s", got.req.Status)
	}
}

func TestDiscord_NoMentionFromAgentText(t *testing.T) {
	modes(t, func(t *testing.T, opts ...harnessOption) {
		h := newHarness(t, opts...)
		body := fsWrite("/srv/@everyone/<@123>.txt")
		body["intent"] = "ping @everyone and <@123> and <@&456> in <#789> **bold** [x](https://evil.example) `tick"
		res := h.submit(body, "30s")
		id, card := h.cardN(1)
		if !strings.Contains(card.Content, "@everyone") {
			t.Errorf("the card hides the text:\n%s", card.Content)
		}
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.Deny)})
		waitAgent(t, res)
		h.fake.Await(t, waitFor, "the edit", func(s *discordtest.Server) bool { m, _ := s.MessageLocked(card.ID); return m.Edits > 0 })
		noMentionsAnywhere(t, h)
	})
}

func TestDiscord_SlashCommands(t *testing.T) {
	h := newHarness(t)
	var cmds []struct {
		Name    string
		Options []struct{ Name string }
	}
	h.fake.Await(t, waitFor, "command registration", func(s *discordtest.Server) bool {
		return len(s.CallsLocked("commands.overwrite")) > 0
	})
	if err := json.Unmarshal(h.fake.Commands(), &cmds); err != nil || len(cmds) != 1 || cmds[0].Name != "approvals" {
		t.Fatalf("commands %s (%v)", h.fake.Commands(), err)
	}
	var subs []string
	for _, o := range cmds[0].Options {
		subs = append(subs, o.Name)
	}
	if strings.Join(subs, ",") != "pending,grants,revoke,audit,rules" {
		t.Errorf("subcommands %v", subs)
	}
	h.submit(fsWrite("/srv/pending.txt"), "30s")
	id, _ := h.cardN(1)
	answer := func(user, cmd string, opts map[string]any) string {
		t.Helper()
		_, token := h.fake.Tap(t, discordtest.Interaction{UserID: user, Command: cmd, Options: opts})
		var text string
		h.fake.Await(t, waitFor, "/approvals "+cmd, func(s *discordtest.Server) bool {
			for _, c := range s.CallsLocked("original.edit") {
				if strings.Contains(c.Path, token) {
					text, _ = c.Payload()["content"].(string)
					return true
				}
			}
			return false
		})
		return text
	}
	if got := answer(approverID, "pending", nil); !strings.Contains(got, id) {
		t.Errorf("pending: %q", got)
	}
	if got := answer(strangerID, "pending", nil); !strings.Contains(got, "not an approver") {
		t.Errorf("stranger pending: %q", got)
	}
	if got := answer(approverID, "grants", nil); !strings.Contains(got, "No active grants") {
		t.Errorf("grants: %q", got)
	}
	if got := answer(strangerID, "revoke", map[string]any{"id": 1}); !strings.Contains(got, "discord\\.admins") {
		t.Errorf("stranger revoke: %q", got)
	}
	if got := answer(adminID, "revoke", map[string]any{"id": 99}); !strings.Contains(got, "not active") {
		t.Errorf("admin revoke: %q", got)
	}
	if got := answer(adminID, "audit", nil); !strings.Contains(got, "audit") {
		t.Errorf("audit: %q", got)
	}
	if got := answer(strangerID, "rules", nil); !strings.Contains(got, "discord\\.admins") {
		t.Errorf("rules by a non-admin: %q", got)
	}
	noMentionsAnywhere(t, h)
}

// Expiry edits the card: the outcome, no buttons.
func TestDiscord_ExpiryEditsCard(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/expires.txt"), "0s")
	id, card := h.cardN(1)
	h.offset.Add(int64(11 * time.Minute)) // past approvals.timeout, by the gateway's clock
	h.fake.Await(t, waitFor, "the expired card", func(s *discordtest.Server) bool {
		m, _ := s.MessageLocked(card.ID)
		return m.Edits > 0
	})
	if r := h.get(id); r.Status != approvals.StatusExpired {
		t.Fatalf("status %s", r.Status)
	}
	h.fake.Await(t, waitFor, "the expired card", func(s *discordtest.Server) bool {
		m, _ := s.MessageLocked(card.ID)
		return m.Edits > 0 && len(m.Buttons()) == 0 && strings.Contains(m.Content, "xpired")
	})
}

// A target far over Discord's 2,000 characters: the card is cut to fit
// (the fake refuses a longer one), says so, and still has its buttons.
func TestDiscord_LongTargetFits(t *testing.T) {
	h := newHarness(t)
	body := fsWrite("/srv/" + strings.Repeat("a", 1500) + ".txt")
	body["intent"] = strings.Repeat("b", 10000)
	h.submit(body, "0s")
	_, card := h.cardN(1)
	if n := len([]rune(card.Content)); n > discord.DiscordMaxContent {
		t.Errorf("content %d characters", n)
	}
	if !strings.Contains(card.Content, "characters") || len(card.Buttons()) < 3 {
		t.Errorf("the cut card does not say what was cut, or lost its buttons:\n%s", card.Content)
	}
}

// discord.language = "it": the buttons and the answers in Italian, from
// the same catalog as Telegram's and Slack's.
func TestDiscord_Italian(t *testing.T) {
	h := newHarness(t, func(h *harness) { discord.Of(h.cfg).Language = "it" })
	h.submit(fsWrite("/srv/it.txt"), "0s")
	id, card := h.cardN(1)
	it := locale.New(locale.Lang("it"), time.UTC, nil)
	if got := card.Labels(); got[0] != it.T("button.allow_once") || got[len(got)-1] != it.T("button.deny") {
		t.Errorf("labels %q", got)
	}
	h.fake.Tap(t, discordtest.Interaction{UserID: strangerID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.Deny)})
	h.ephemeralWith(discord.EscapeDiscord(it.T("refusal.not_approver"))[:20])
}

// TestDiscord_TapBeforeTheCardIsRecorded: Discord shows a card before the
// answer to its post is recorded, so a tap may arrive first; it waits for
// the record instead of being refused as another message's button.
func TestDiscord_TapBeforeTheCardIsRecorded(t *testing.T) {
	h := newHarness(t)
	res := h.submit(fsWrite("/srv/early.txt"), "30s")
	id, card := h.cardN(1)
	ctx := context.Background()
	var ref string
	if err := h.app.DB.QueryRowContext(ctx, `SELECT ref FROM cards WHERE request_id = $1 AND channel = 'discord'`, id).Scan(&ref); err != nil {
		t.Fatal(err)
	}
	if _, err := h.app.DB.ExecContext(ctx, `UPDATE cards SET ref = NULL WHERE request_id = $1 AND channel = 'discord'`, id); err != nil {
		t.Fatal(err)
	}
	h.fake.Tap(t, discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
	time.Sleep(300 * time.Millisecond) // the record comes late: that is the case under test
	if _, err := h.app.DB.ExecContext(ctx, `UPDATE cards SET ref = $2 WHERE request_id = $1 AND channel = 'discord'`, id, ref); err != nil {
		t.Fatal(err)
	}
	if got := waitAgent(t, res); got.req.Status != approvals.StatusAllowed {
		t.Fatalf("a tap just before its card was recorded: %s", got.req.Status)
	}
}
