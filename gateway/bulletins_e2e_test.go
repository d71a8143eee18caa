package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/web/webtest"
)

// TestPasskeyBulletin_Messengers: a passkey added on the page and one
// removed outside it (as `gateway passkeys remove` does, on the database)
// each reach the fake Telegram and the fake Slack as one plain message,
// the passkey's name (a person's string) in a code entity (its escaping:
// cards.TestBulletin).
// A Slack that fails gets its message on the retry, once; Telegram's is
// not held back by it.
func TestPasskeyBulletin_Messengers(t *testing.T) {
	g := newChatGW(t, func(*config.Config) {})
	base := g.pageBase()
	w := passkeystest.Login(t, base, webtest.LoginLink(t, g.app, base, "owner"))
	const name = "EvePhone"
	w.Register(&passkeystest.Authenticator{Origin: base}, name)

	tgHas := func(want string) []string {
		var out []string
		for _, m := range g.tg.BotMessages() {
			if strings.Contains(m.Text, want) {
				out = append(out, m.HTML)
			}
		}
		return out
	}
	slHas := func(want string) []string {
		var out []string
		for _, c := range g.sl.History() {
			if c.Method == "chat.postMessage" && c.Error == "" && c.Status == http.StatusOK && strings.Contains(c.Text(), want) {
				out = append(out, c.Text())
			}
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 30 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	added := "Passkey " + name + " was added for web user owner (proved by login link)"
	waitFor("bulletin of the added passkey", func() bool { return len(tgHas(added)) > 0 && len(slHas(added)) > 0 })
	if html := tgHas(added)[0]; !strings.Contains(html, "<code>EvePhone</code>") {
		t.Errorf("telegram: the passkey's name is not a code entity:\n%s", html)
	}

	// Removed outside the page, while Slack fails once.
	g.sl.Fail("chat.postMessage", slacktest.Failure{Status: 500})
	store := passkeys.New(g.app.DB, nil)
	list, err := store.List(context.Background(), "owner")
	if err != nil || len(list) != 1 {
		t.Fatalf("passkeys: %v %v", list, err)
	}
	if _, err := store.Remove(context.Background(), "owner", list[0].ID, "cli"); err != nil {
		t.Fatal(err)
	}
	removed := "Passkey " + name + " of web user owner was removed by cli (removed)"
	waitFor("bulletin of the removed passkey", func() bool { return len(tgHas(removed)) > 0 && len(slHas(removed)) > 0 })

	// After a restart, the next change is posted and nothing before it
	// again (each messenger's rows are posted in order).
	g.restart()
	w.Register(&passkeystest.Authenticator{Origin: base}, "second")
	again := "Passkey second was added"
	waitFor("bulletin after the restart", func() bool { return len(tgHas(again)) > 0 && len(slHas(again)) > 0 })
	for what, n := range map[string]int{
		"telegram added": len(tgHas(added)), "slack added": len(slHas(added)),
		"telegram removed": len(tgHas(removed)), "slack removed": len(slHas(removed)),
	} {
		if n != 1 {
			t.Errorf("%s: %d messages, want 1", what, n)
		}
	}
}
