package main

// The Slack stand-in of the walkthroughs (walkthrough_cmds_test.go): the
// project's fake Web API (slacktest), where the pages talk to Slack, and
// Slack's own posts to the gateway (clicks, slash commands) signed as Slack
// signs them, with $SLACK_SIGNING_SECRET of the reader's environment.
//
//	slack                          start the fake: $SLACK_API (for slack.api_url)
//	sl press USER LABEL OUT        USER clicks the button LABEL of the last card in the channel; once the card
//	                               is updated, its outcome line into OUT; when the gateway answers privately
//	                               instead (a refusal, the Allow always confirmation), that answer into OUT
//	sl command USER TEXT OUT       USER types /approvals TEXT; its private answer into OUT
//	sl outcome OUT                 the newest card's outcome line, once it is edited to one

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/slack-go/slack"

	"github.com/metnos/gateway/messenger/slack/slacktest"
)

type slackState struct {
	fake   *slacktest.Server
	answer int // how many private answers (response_url posts, ephemeral messages) the script has taken
}

func (f *walkFakes) slack() *slacktest.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := slacktest.New(slacktest.Options{})
	f.t.Cleanup(s.Close)
	return s
}

func cmdSlack(fakes *walkFakes) func(ts *testscript.TestScript, neg bool, args []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		w := walkOf(ts)
		if neg || len(args) != 0 || w.sl != nil {
			ts.Fatalf("usage: slack (once)")
		}
		w.sl = &slackState{fake: fakes.slack()}
		ts.Setenv("SLACK_API", w.sl.fake.APIURL())
		runHidden(ts, "export SLACK_API='"+w.sl.fake.APIURL()+"'")
	}
}

func cmdSl(ts *testscript.TestScript, neg bool, args []string) {
	w := walkOf(ts)
	if w.sl == nil || neg || !(len(args) == 4 && (args[0] == "press" || args[0] == "command") || len(args) == 2 && args[0] == "outcome") {
		ts.Fatalf("usage: slack first, then sl press USER LABEL OUT | sl command USER TEXT OUT | sl outcome OUT")
	}
	f := w.sl.fake
	if args[0] == "outcome" {
		out := waitFor(ts, func() (string, bool) {
			ms := f.Messages("")
			if len(ms) == 0 {
				return "", false
			}
			m := ms[len(ms)-1]
			return slackOutcome(m), m.Updates > 0 && len(slackLabels(m)) == 0
		}, "card edited to its outcome")
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out+"\n"), 0o600))
		return
	}
	user := args[1]
	if args[0] == "command" {
		w.slackPost(ts, "/slack/commands", slacktest.Command{UserID: user, UserName: slackName(user),
			ChannelID: "C0123456", Text: args[2], ResponseURL: f.ResponseURL("cmd")}.Form())
		ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(w.sl.nextAnswer(ts)+"\n"), 0o600))
		return
	}
	before := waitFor(ts, func() (slacktest.Message, bool) {
		ms := f.Messages("")
		for i := len(ms) - 1; i >= 0; i-- {
			if len(slackLabels(ms[i])) > 0 {
				return ms[i], true
			}
		}
		return slacktest.Message{}, false
	}, "card with buttons in the channel")
	channel, ts0 := before.Channel, before.TS
	block, action, value := slackButton(ts, before, args[2])
	answers := w.sl.privateAnswers()
	w.slackPost(ts, "/slack/interactions", slacktest.InteractionBody(slacktest.BlockAction{
		UserID: user, UserName: slackName(user), ChannelID: channel, MessageTS: ts0,
		BlockID: block, ActionID: action, Value: value, ResponseURL: f.ResponseURL("click"),
	}.JSON()))
	out := waitFor(ts, func() (string, bool) {
		if m, _ := f.Message(channel, ts0); m.Updates > before.Updates && len(slackLabels(m)) == 0 {
			return slackOutcome(m), true
		}
		if w.sl.privateAnswers() > answers {
			w.sl.answer = answers
			return w.sl.nextAnswer(ts), true
		}
		return "", false
	}, "update of the card or a private answer")
	ts.Check(os.WriteFile(ts.MkAbs(args[3]), []byte(out+"\n"), 0o600))
}

// slackPost posts body to the gateway as Slack does, signed.
func (w *walk) slackPost(ts *testscript.TestScript, path string, body []byte) {
	req, err := http.NewRequest("POST", "http://127.0.0.1:"+ts.Getenv("PORT")+path, bytes.NewReader(body))
	ts.Check(err)
	for k, v := range slacktest.Sign(w.shell.env("SLACK_SIGNING_SECRET"), time.Now(), body) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("POST %s: %s %s", path, resp.Status, b)
	}
}

// privateAnswer: the ways the gateway answers one person only.
var privateAnswer = map[string]bool{"response_url": true, "chat.postEphemeral": true}

func (s *slackState) privateAnswers() int {
	n := 0
	for _, c := range s.fake.History() {
		if privateAnswer[c.Method] {
			n++
		}
	}
	return n
}

// nextAnswer is the text of the next private answer not yet taken.
func (s *slackState) nextAnswer(ts *testscript.TestScript) string {
	c := waitFor(ts, func() (slacktest.Call, bool) {
		n := 0
		for _, c := range s.fake.History() {
			if privateAnswer[c.Method] {
				if n == s.answer {
					return c, true
				}
				n++
			}
		}
		return slacktest.Call{}, false
	}, "private answer")
	s.answer++
	return c.Text()
}

// slackButton finds the button whose label holds label.
func slackButton(ts *testscript.TestScript, m slacktest.Message, label string) (block, action, value string) {
	for _, b := range slackBlocks(m) {
		if a, ok := b.(*slack.ActionBlock); ok {
			for _, e := range a.Elements.ElementSet {
				if btn, ok := e.(*slack.ButtonBlockElement); ok && btn.Text != nil && strings.Contains(btn.Text.Text, label) {
					return a.BlockID, btn.ActionID, btn.Value
				}
			}
		}
	}
	ts.Fatalf("sl press: the card has no button %q: %v", label, slackLabels(m))
	return "", "", ""
}

func slackLabels(m slacktest.Message) []string {
	var out []string
	for _, b := range slackBlocks(m) {
		if a, ok := b.(*slack.ActionBlock); ok {
			for _, e := range a.Elements.ElementSet {
				if btn, ok := e.(*slack.ButtonBlockElement); ok && btn.Text != nil {
					out = append(out, btn.Text.Text)
				}
			}
		}
	}
	return out
}

func slackBlocks(m slacktest.Message) []slack.Block {
	var bs slack.Blocks
	if err := json.Unmarshal([]byte(m.Blocks), &bs); err != nil {
		return nil
	}
	return bs.BlockSet
}

// slackOutcome is the updated card's outcome: its last section's text
// (the request's id follows it, in a context line).
func slackOutcome(m slacktest.Message) string {
	last := m.Text
	for _, b := range slackBlocks(m) {
		if sec, ok := b.(*slack.SectionBlock); ok && sec.Text != nil {
			last = sec.Text.Text
		}
	}
	return last
}

// slackName is the user name Slack sends with a person's clicks: the
// pages' approver is roberto.
func slackName(id string) string {
	if id == "U0123456" {
		return "roberto"
	}
	return strings.ToLower(id)
}
