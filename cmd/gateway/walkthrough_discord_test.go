package main

// The Discord stand-in of the walkthroughs (walkthrough_cmds_test.go): the
// project's fake Discord (discordtest: the REST API and the websocket
// gateway), where the pages talk to Discord, with the page's ids; taps and
// slash commands arrive over the websocket as Discord sends them.
//
//	discord                        start the fake: $DISCORD_API (for discord.api_url), $DISCORD_FAKE_TOKEN
//	dc press USER LABEL OUT        USER (80351110224678912 is the pages' roberto) taps the button LABEL of the
//	                               last card in the channel; once the card is edited without buttons, its
//	                               outcome line into OUT, as Discord shows it; when the card shows other
//	                               buttons instead (a menu), their labels; when the gateway answers
//	                               privately, that answer
//	dc command USER SUB OUT        USER types /approvals SUB; its private answer into OUT
//	dc outcome OUT                 the newest card's outcome line, once it is edited to one

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/metnos/gateway/messenger/discord/discordtest"
)

// The ids of docs/discord.md's config.
const (
	discordApp     = "1100000000000000001"
	discordGuild   = "1100000000000000002"
	discordChannel = "1100000000000000003"
	discordToken   = "discord-walkthrough-token"
)

func (f *walkFakes) discord() *discordtest.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := discordtest.New(discordtest.Options{Token: discordToken, ApplicationID: discordApp,
		GuildID: discordGuild, ChannelID: discordChannel})
	f.t.Cleanup(s.Close)
	return s
}

func cmdDiscord(fakes *walkFakes) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		w := walkOf(ts)
		if neg || len(args) != 0 || w.dc != nil {
			ts.Fatalf("usage: discord (once)")
		}
		w.dc = fakes.discord()
		for k, v := range map[string]string{"DISCORD_API": w.dc.APIURL(), "DISCORD_FAKE_TOKEN": discordToken} {
			ts.Setenv(k, v)
			runHidden(ts, "export "+k+"='"+v+"'")
		}
	}
}

// dcDispatch sends in over the bot's websocket once it has one: the
// gateway opens it in the background after it starts (no session yet is
// Dispatch's only error, and then nothing was sent).
func dcDispatch(ts *testscript.TestScript, f *discordtest.Server, in discordtest.Interaction) {
	waitFor(ts, func() (struct{}, bool) {
		_, _, err := f.Dispatch(in)
		return struct{}{}, err == nil
	}, "gateway session of the bot to dispatch to")
}

func cmdDc(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	ok := len(args) == 4 && (args[0] == "press" || args[0] == "command") || len(args) == 2 && args[0] == "outcome"
	if w.dc == nil || neg || !ok {
		ts.Fatalf("usage: discord first, then dc press USER LABEL OUT | dc command USER SUB OUT | dc outcome OUT")
	}
	f := w.dc
	write := func(out, text string) { ts.Check(os.WriteFile(ts.MkAbs(out), []byte(text+"\n"), 0o600)) }
	switch args[0] {
	case "outcome":
		write(args[1], waitFor(ts, func() (string, bool) {
			cards := discordCards(f)
			if len(cards) == 0 {
				return "", false
			}
			m := cards[len(cards)-1]
			return discordOutcome(m), m.Edits > 0 && len(m.Buttons()) == 0
		}, "card edited to its outcome"))
	case "command":
		seen := len(f.Messages(discordChannel))
		dcDispatch(ts, f, discordtest.Interaction{UserID: args[1], Username: discordName(args[1]), Command: args[2]})
		write(args[3], waitFor(ts, func() (string, bool) { return discordPrivate(f, seen) }, "private answer"))
	case "press":
		card := waitFor(ts, func() (discordtest.Message, bool) {
			cards := discordCards(f)
			for i := len(cards) - 1; i >= 0; i-- {
				if len(cards[i].Buttons()) > 0 {
					return cards[i], true
				}
			}
			return discordtest.Message{}, false
		}, "card with buttons in the channel")
		custom := discordButton(card, args[2])
		if custom == "" {
			ts.Fatalf("dc press: the card has no button %q: %v", args[2], card.Labels())
		}
		seen := len(f.Messages(discordChannel))
		dcDispatch(ts, f, discordtest.Interaction{UserID: args[1], Username: discordName(args[1]), MessageID: card.ID, CustomID: custom})
		write(args[3], waitFor(ts, func() (string, bool) {
			if m, _ := f.Message(card.ID); m.Edits > card.Edits && len(m.Buttons()) == 0 {
				return discordOutcome(m), true
			} else if m.Edits > card.Edits { // a menu (Allow always's scopes): its labels
				return strings.Join(m.Labels(), "\n"), true
			}
			return discordPrivate(f, seen)
		}, "edit of the card or a private answer"))
	}
}

// discordCards are the channel's messages everyone sees.
func discordCards(f *discordtest.Server) []discordtest.Message {
	var out []discordtest.Message
	for _, m := range f.Messages(discordChannel) {
		if !m.Ephemeral {
			out = append(out, m)
		}
	}
	return out
}

// discordPrivate is the first ephemeral answer after the channel's first
// seen messages, once it has its text (a deferred answer is edited to it).
func discordPrivate(f *discordtest.Server, seen int) (string, bool) {
	ms := f.Messages(discordChannel)
	for _, m := range ms[min(seen, len(ms)):] {
		if m.Ephemeral && m.Content != "…" {
			return discordShown(m.Content), true
		}
	}
	return "", false
}

// discordButton is the custom id of the button whose label holds label.
func discordButton(m discordtest.Message, label string) string {
	var rows []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	_ = json.Unmarshal(m.Components, &rows)
	for _, r := range rows {
		for _, c := range r.Components {
			if c.CustomID != "" && strings.Contains(c.Label, label) {
				return c.CustomID
			}
		}
	}
	return ""
}

// discordOutcome is the edited card's last line but the request's id.
func discordOutcome(m discordtest.Message) string {
	lines := strings.Split(strings.TrimSpace(m.Content), "\n")
	for len(lines) > 1 && strings.Contains(strings.ToLower(lines[len(lines)-1]), "request ") {
		lines = lines[:len(lines)-1]
	}
	return discordShown(lines[len(lines)-1])
}

// discordShown is text as Discord shows it: bold drawn, escapes gone.
func discordShown(s string) string {
	s = strings.ReplaceAll(s, "**", "")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// discordName is the user name Discord sends with a person's taps: the
// pages' approver is roberto.
func discordName(id string) string {
	if id == "80351110224678912" {
		return "roberto"
	}
	return "u" + id
}
