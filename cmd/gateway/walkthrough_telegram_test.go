package main

// The Telegram stand-in of the walkthroughs (walkthrough_cmds_test.go):
// the project's fake Bot API (telegramtest), where the pages talk to
// Telegram.
//
//	telegram                       start the fake: $TELEGRAM_API (for telegram.api_endpoint), $TELEGRAM_FAKE_URL
//	                               (where https://api.telegram.org is, for the reader's curl), $TELEGRAM_FAKE_TOKEN
//	tg say USER CHAT TEXT          the user with id USER ("Roberto") writes TEXT in chat CHAT
//	tg reply CHAT OUT              the bot's next message in CHAT, its visible text into OUT
//	tg press CHAT LABEL OUT        the user of a private chat taps the button LABEL of the bot's last card
//	                               there; once the card is edited, its outcome line (above its request id)
//	                               into OUT, or the labels of the buttons it shows now (a menu)
//	tg note CHAT TEXT OUT          the user of a private chat replies TEXT to the bot's last card there; the
//	                               bot's answer into OUT, the card's request id into $REQUEST_ID
//	tg webhook URL | tg unhook     another deployment sets a webhook on the bot / the reader deletes it

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// walkFakes starts the stand-ins for a whole test run: a fake's cleanup
// belongs to a testing.TB, which a script does not have.
type walkFakes struct {
	t  testing.TB
	mu sync.Mutex
}

func (f *walkFakes) telegram() *telegramtest.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return telegramtest.New(f.t, telegramtest.Options{})
}

type tgState struct {
	fake *telegramtest.Server
	seen map[int64]map[int]bool // per chat: the bot messages a tg reply or press took
}

func cmdTelegram(fakes *walkFakes) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		w := walkOf(ts)
		if neg || len(args) != 0 || w.tg != nil {
			ts.Fatalf("usage: telegram (once)")
		}
		w.tg = &tgState{fake: fakes.telegram(), seen: map[int64]map[int]bool{}}
		for k, v := range map[string]string{"TELEGRAM_API": w.tg.fake.Endpoint(), "TELEGRAM_FAKE_URL": w.tg.fake.URL,
			"TELEGRAM_FAKE_TOKEN": telegramtest.DefaultToken} {
			ts.Setenv(k, v)
			runHidden(ts, "export "+k+"='"+v+"'")
		}
	}
}

// cardIDRE finds the request's id on the line that closes every card.
var cardIDRE = regexp.MustCompile(`(?m)^Request (r[a-z0-9]+)$`)

func roberto(id int64) tgbotapi.User { return tgbotapi.User{ID: id, FirstName: "Roberto"} }

func cmdTg(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if w.tg == nil || neg || len(args) == 0 {
		ts.Fatalf("usage: telegram first, then tg say|reply|press|webhook|unhook …")
	}
	f := w.tg.fake
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		ts.Check(err)
		return n
	}
	switch {
	case args[0] == "say" && len(args) == 4:
		f.Say(roberto(num(args[1])), num(args[2]), args[3], 0)
	case args[0] == "reply" && len(args) == 3:
		chat := num(args[1])
		m := w.tg.next(ts, chat, func(m telegramtest.Message) bool { return true })
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(m.Text+"\n"), 0o600))
	case args[0] == "press" && len(args) == 4:
		chat := num(args[1])
		card := waitFor(ts, func() (telegramtest.Message, bool) {
			ms := f.Messages(chat)
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].From == nil && len(ms[i].Buttons()) > 0 {
					return ms[i], true
				}
			}
			return telegramtest.Message{}, false
		}, "card with buttons")
		var data string
		for _, b := range card.Buttons() {
			if strings.Contains(b.Text, args[2]) && b.CallbackData != nil {
				data = *b.CallbackData
			}
		}
		if data == "" {
			ts.Fatalf("tg press: the card has no button %q: %v", args[2], card.Buttons())
		}
		f.Press(roberto(chat), chat, card.ID, data)
		edited := waitFor(ts, func() (telegramtest.Message, bool) {
			m, ok := f.Message(chat, card.ID)
			return m, ok && m.Edits > card.Edits
		}, "edit of the card")
		if len(edited.Buttons()) > 0 { // a menu (Allow always's scopes): its buttons into OUT
			var labels []string
			for _, b := range edited.Buttons() {
				labels = append(labels, b.Text)
			}
			ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(strings.Join(labels, "\n")+"\n"), 0o600))
			return
		}
		ts.Logf("the card, edited:\n%s", edited.Text)
		lines := strings.Split(strings.TrimSpace(edited.Text), "\n")
		for len(lines) > 1 && strings.HasPrefix(lines[len(lines)-1], "Request ") {
			lines = lines[:len(lines)-1] // the request's id closes every card
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(lines[len(lines)-1]+"\n"), 0o600))
	case args[0] == "note" && len(args) == 4:
		chat := num(args[1])
		card := waitFor(ts, func() (telegramtest.Message, bool) {
			ms := f.Messages(chat)
			for i := len(ms) - 1; i >= 0; i-- {
				if ms[i].From == nil && cardIDRE.MatchString(ms[i].Text) {
					return ms[i], true
				}
			}
			return telegramtest.Message{}, false
		}, "card")
		id := cardIDRE.FindStringSubmatch(card.Text)[1]
		ts.Setenv("REQUEST_ID", id)
		runHidden(ts, "export REQUEST_ID="+id)
		f.Say(roberto(chat), chat, args[2], card.ID)
		m := w.tg.next(ts, chat, func(m telegramtest.Message) bool { return m.ID > card.ID })
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(m.Text+"\n"), 0o600))
	case args[0] == "webhook" && len(args) == 2:
		botCall(ts, f, "setWebhook", url.Values{"url": {args[1]}})
	case args[0] == "unhook" && len(args) == 1:
		botCall(ts, f, "deleteWebhook", nil)
	default:
		ts.Fatalf("tg: unknown use %q", args)
	}
}

// next waits for the bot's next message in chat that ok accepts and no
// earlier tg reply or press took.
func (s *tgState) next(ts *testscript.TestScript, chat int64, ok func(telegramtest.Message) bool) telegramtest.Message {
	if s.seen[chat] == nil {
		s.seen[chat] = map[int]bool{}
	}
	m := waitFor(ts, func() (telegramtest.Message, bool) {
		for _, m := range s.fake.Messages(chat) {
			if m.From == nil && !s.seen[chat][m.ID] && ok(m) {
				return m, true
			}
		}
		return telegramtest.Message{}, false
	}, fmt.Sprintf("message from the bot in chat %d", chat))
	s.seen[chat][m.ID] = true
	return m
}

// waitFor looks again until cond holds, bounded by stepTimeout.
func waitFor[T any](ts *testscript.TestScript, cond func() (T, bool), what string) T {
	deadline := time.Now().Add(stepTimeout)
	for {
		if v, ok := cond(); ok {
			return v
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no %s in %s", what, stepTimeout)
		}
		time.Sleep(20 * time.Millisecond) // polling for a condition, bounded by the deadline
	}
}

func botCall(ts *testscript.TestScript, f *telegramtest.Server, method string, v url.Values) {
	resp, err := http.PostForm(fmt.Sprintf(f.Endpoint(), telegramtest.DefaultToken, method), v)
	ts.Check(err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("%s: %s", method, resp.Status)
	}
}
