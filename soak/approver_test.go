//go:build soak

package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/metnos/gateway/messenger/slack"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// requestIDPattern finds a request id in a card's text ("r" + 26
// lower-case base32 characters, see approvals.newIDAt).
var requestIDPattern = regexp.MustCompile(`\br[a-z2-7]{26}\b`)

// quorumMark is what a card needing two approvers says while none has allowed.
const quorumMark = "Needs 2 approvals"

// card is what the approver saw of one request's cards.
type card struct {
	id        string
	tgMsg     int                           // Telegram message id, 0 until seen
	tgData    map[approvals.Decision]string // callback data of the buttons offered
	tgSeen    time.Time
	tgCount   int   // Telegram cards for this request (more than 1 is a duplicate)
	tgMsgs    []int // every one of them
	slTS      string
	slActions map[approvals.Decision]string // action ids of the buttons offered
	slSeen    time.Time
	slCount   int
	slTSs     []string
	dcMsg     string                        // Discord message id, "" until seen
	dcData    map[approvals.Decision]string // custom ids of the buttons offered
	dcCount   int
	dcMsgs    []string
	scheduled bool
	quorum    bool // the card asks for two approvals: tap both channels, allowing
}

// tap is one button press the approver made.
type tap struct {
	Channel  string // "telegram", "slack" or "discord"
	Decision approvals.Decision
	At       time.Time
	QueryID  string // Telegram callback query id
	Err      error
}

// approver is the scripted person: it watches both fakes for cards and
// taps their buttons, through the fake Telegram (a callback_query update
// queued for getUpdates) or Slack (a signed interaction POSTed to the
// gateway, as Slack posts it).
type approver struct {
	tg     *telegramtest.Server
	sl     *slacktest.Server
	dc     *discordtest.Server // nil: no Discord
	secret string              // Slack signing secret
	base   func() string       // the gateway's URL (it changes across restarts)
	hc     *http.Client
	user   tgbotapi.User
	plan   func(id string) []string // nil: tap nothing by itself
	think  func() time.Duration

	mu        sync.Mutex
	cards     map[string]*card
	taps      map[string][]tap
	unknownTG int // bot messages with no request id (answers, edits we never saw pending)
	unknownSL int
	tgNext    int
	slNext    int64
	dcNext    int
	unknownDC int
	pending   sync.WaitGroup // scheduled taps
	slackHTTP []int          // statuses of interaction POSTs that were not 200
}

func newApprover(tg *telegramtest.Server, sl *slacktest.Server, secret string, base func() string) *approver {
	return &approver{
		tg: tg, sl: sl, secret: secret, base: base,
		hc:    &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 10 * time.Second},
		user:  tgbotapi.User{ID: tgApproverID, FirstName: "Roberto", UserName: "roberto"},
		cards: map[string]*card{}, taps: map[string][]tap{}, tgNext: 1, slNext: 1, dcNext: 1,
	}
}

// watch polls both fakes for new cards every 10 ms until ctx ends.
func (a *approver) watch(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		a.scan()
		select {
		case <-ctx.Done():
			a.scan()
			return
		case <-t.C:
		}
	}
}

// slackTS is the ts of the fake's n-th message (slacktest numbers them
// from 1700000000.000100 up, one per chat.postMessage).
func slackTS(n int64) string {
	v := int64(1700000000000100) + n
	return fmt.Sprintf("%d.%06d", v/1000000, v%1000000)
}

// scan reads the messages posted since the last scan.
func (a *approver) scan() {
	a.scanDiscord()
	for {
		m, ok := a.tg.Message(tgChatID, a.tgNext)
		if !ok {
			break
		}
		a.tgNext++
		if m.From != nil {
			continue
		}
		data := map[approvals.Decision]string{}
		id := ""
		for _, b := range m.Buttons() {
			if b.CallbackData == nil {
				continue
			}
			if cb, err := cards.Decode(*b.CallbackData); err == nil && cb.RequestID != "" {
				data[cb.Decision], id = *b.CallbackData, cb.RequestID
			}
		}
		if id == "" {
			id = requestIDPattern.FindString(m.Text)
		}
		a.mu.Lock()
		if id == "" {
			a.unknownTG++
			a.mu.Unlock()
			continue
		}
		c := a.cardLocked(id)
		c.quorum = c.quorum || strings.Contains(m.Text, quorumMark)
		c.tgCount++
		c.tgMsgs = append(c.tgMsgs, m.ID)
		if c.tgMsg == 0 {
			c.tgMsg, c.tgData, c.tgSeen = m.ID, data, time.Now()
		}
		a.maybeScheduleLocked(c)
		a.mu.Unlock()
	}
	if a.sl == nil {
		return
	}
	for {
		ts := slackTS(a.slNext)
		m, ok := a.sl.Message(slackChannel, ts)
		if !ok {
			break
		}
		a.slNext++
		actionIDs, values := slacktest.Call{Form: url.Values{"blocks": {m.Blocks}}}.Buttons()
		acts := map[approvals.Decision]string{}
		id := ""
		for i, act := range actionIDs {
			if cb, err := slack.ParseSlackAction(slack.SlackDecisionBlockID(values[i]), act, values[i]); err == nil && cb.RequestID != "" {
				acts[cb.Decision], id = act, cb.RequestID
			}
		}
		if id == "" {
			id = requestIDPattern.FindString(m.Blocks + " " + m.Text)
		}
		a.mu.Lock()
		if id == "" {
			a.unknownSL++
			a.mu.Unlock()
			continue
		}
		c := a.cardLocked(id)
		c.quorum = c.quorum || strings.Contains(m.Blocks, quorumMark)
		c.slCount++
		c.slTSs = append(c.slTSs, ts)
		if c.slTS == "" {
			c.slTS, c.slActions, c.slSeen = ts, acts, time.Now()
		}
		a.maybeScheduleLocked(c)
		a.mu.Unlock()
	}
}

// scanDiscord reads the Discord cards posted since the last scan.
func (a *approver) scanDiscord() {
	if a.dc == nil {
		return
	}
	for {
		m, ok := a.dc.MessageAt(a.dcNext)
		if !ok {
			return
		}
		a.dcNext++
		if m.Ephemeral || m.ChannelID != discordChannel {
			continue
		}
		data := map[approvals.Decision]string{}
		id := ""
		for _, b := range m.Buttons() {
			if cb, err := cards.Decode(b); err == nil && cb.RequestID != "" {
				if cb.Decision != "" && cb.Scope <= 1 && cb.For == 0 {
					data[cb.Decision] = b
				}
				id = cb.RequestID
			}
		}
		if id == "" {
			id = requestIDPattern.FindString(m.Content)
		}
		a.mu.Lock()
		if id == "" {
			a.unknownDC++
			a.mu.Unlock()
			continue
		}
		c := a.cardLocked(id)
		c.dcCount++
		c.dcMsgs = append(c.dcMsgs, m.ID)
		if c.dcMsg == "" {
			c.dcMsg, c.dcData = m.ID, data
		}
		a.maybeScheduleLocked(c)
		a.mu.Unlock()
	}
}

func (a *approver) cardLocked(id string) *card {
	c := a.cards[id]
	if c == nil {
		c = &card{id: id}
		a.cards[id] = c
	}
	return c
}

// maybeScheduleLocked schedules the taps the plan wants once the cards
// they need have arrived, after the person's thinking time.
func (a *approver) maybeScheduleLocked(c *card) {
	if a.plan == nil || c.scheduled {
		return
	}
	chans := a.plan(c.id)
	if c.quorum {
		chans = []string{"telegram", "slack"} // two approvers, one on each
	}
	for _, ch := range chans {
		if ch == "telegram" && len(c.tgData) == 0 || ch == "slack" && len(c.slActions) == 0 || ch == "discord" && len(c.dcData) == 0 {
			return // not there yet, or a card without buttons (already finished)
		}
	}
	c.scheduled = true
	decisions := a.pickDecisions(c, chans)
	if c.quorum {
		// Both allow, with the same button: the request is allowed once
		// both are counted (Allow always only when both chose it).
		d := []approvals.Decision{approvals.AllowOnce, approvals.AllowAlways}[rand.IntN(2)]
		if _, ok := c.tgData[d]; !ok {
			d = approvals.AllowOnce
		}
		decisions = []approvals.Decision{d, d}
	}
	think := a.think()
	a.pending.Add(1)
	time.AfterFunc(think, func() {
		defer a.pending.Done()
		var wg sync.WaitGroup
		for i, ch := range chans { // several channels: tapped at the same moment
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.tap(c.id, ch, decisions[i])
			}()
		}
		wg.Wait()
	})
}

// pickDecisions picks a random offered decision per channel, different
// ones when the same request is tapped on two channels at once.
func (a *approver) pickDecisions(c *card, chans []string) []approvals.Decision {
	var out []approvals.Decision
	for _, ch := range chans {
		offered := c.tgData
		switch ch {
		case "slack":
			offered = c.slActions
		case "discord":
			offered = c.dcData
		}
		var opts []approvals.Decision
		for _, d := range []approvals.Decision{approvals.AllowOnce, approvals.AllowAlways, approvals.Deny} {
			if _, ok := offered[d]; ok && (len(out) == 0 || d != out[0]) {
				opts = append(opts, d)
			}
		}
		if len(opts) == 0 { // no buttons seen: the tap will say so
			out = append(out, approvals.AllowOnce)
			continue
		}
		out = append(out, opts[rand.IntN(len(opts))])
	}
	return out
}

// tap presses the button of decision d on the request's card in ch.
func (a *approver) tap(id, ch string, d approvals.Decision) tap {
	a.mu.Lock()
	c := a.cards[id]
	var msg int
	var data, ts, action, dcMsg, dcID string
	if c != nil {
		msg, data, ts, action = c.tgMsg, c.tgData[d], c.slTS, c.slActions[d]
		dcMsg, dcID = c.dcMsg, c.dcData[d]
	}
	a.mu.Unlock()
	rec := tap{Channel: ch, Decision: d, At: time.Now()}
	switch {
	case ch == "telegram" && data != "":
		rec.QueryID = a.tg.Press(a.user, tgChatID, msg, data)
	case ch == "slack" && action != "":
		rec.Err = a.click(id, ts, action)
	case ch == "discord" && dcID != "":
		// Over the websocket; a connection that is down gets it on RESUME.
		_, _, rec.Err = a.dc.Dispatch(discordtest.Interaction{UserID: discordApprover, MessageID: dcMsg, CustomID: dcID})
	default:
		rec.Err = fmt.Errorf("no %s button %s on the card of %s", ch, d, id)
	}
	a.mu.Lock()
	a.taps[id] = append(a.taps[id], rec)
	a.mu.Unlock()
	return rec
}

// click posts a block_actions interaction, signed as Slack signs it.
func (a *approver) click(id, ts, action string) error {
	body := slacktest.InteractionBody(slacktest.BlockAction{
		UserID: slackApprover, UserName: "roberto", ChannelID: slackChannel, MessageTS: ts,
		BlockID: slack.SlackDecisionBlockID(id), ActionID: action, Value: id,
		ResponseURL: a.sl.ResponseURL("tap-" + id),
	}.JSON())
	req, err := http.NewRequest(http.MethodPost, a.base()+"/slack/interactions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range slacktest.Sign(a.secret, time.Now(), body) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		a.mu.Lock()
		a.slackHTTP = append(a.slackHTTP, resp.StatusCode)
		a.mu.Unlock()
		return fmt.Errorf("slack interaction answered %d", resp.StatusCode)
	}
	return nil
}

// card returns a copy of what the approver knows of a request's cards.
func (a *approver) card(id string) (card, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.cards[id]
	if !ok {
		return card{}, false
	}
	cp := *c
	cp.tgMsgs, cp.slTSs, cp.dcMsgs = slices.Clone(c.tgMsgs), slices.Clone(c.slTSs), slices.Clone(c.dcMsgs)
	return cp, true
}

func (a *approver) tapsOf(id string) []tap {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]tap(nil), a.taps[id]...)
}

// dupes counts requests with more than one card on a channel.
func (a *approver) dupes() (tg, sl int) {
	tg, sl, _ = a.dupes3()
	return tg, sl
}

// dupes3 is dupes with Discord's.
func (a *approver) dupes3() (tg, sl, dc int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.cards {
		if c.tgCount > 1 {
			tg++
		}
		if c.slCount > 1 {
			sl++
		}
		if c.dcCount > 1 {
			dc++
		}
	}
	return tg, sl, dc
}

// discordDone reports whether the request's Discord cards (those seen)
// show it finished: edited, no buttons.
func (a *approver) discordDone(id string) bool {
	c, ok := a.card(id)
	if !ok || len(c.dcMsgs) == 0 {
		return true
	}
	for _, mid := range c.dcMsgs {
		if m, ok := a.dc.Message(mid); ok && m.Edits > 0 && len(m.Buttons()) == 0 {
			return true
		}
	}
	return false
}

func (a *approver) close() { a.hc.CloseIdleConnections() }

// finishedOnCards reports whether the request's cards (those the approver
// saw) show a finished request: no Telegram keyboard, a Slack message
// updated without buttons. With duplicates (a card posted again after a
// crash lost its message id) the card the gateway knows is enough.
func (a *approver) finishedOnCards(id string) (tgDone, slDone bool) {
	c, ok := a.card(id)
	if !ok {
		return true, true
	}
	tgDone, slDone = len(c.tgMsgs) == 0, len(c.slTSs) == 0
	for _, msg := range c.tgMsgs {
		m, ok := a.tg.Message(tgChatID, msg)
		tgDone = tgDone || ok && m.Keyboard == nil && m.Edits > 0
	}
	for _, ts := range c.slTSs {
		m, ok := a.sl.Message(slackChannel, ts)
		ids, _ := slacktest.Call{Form: url.Values{"blocks": {m.Blocks}}}.Buttons()
		slDone = slDone || ok && m.Updates > 0 && len(ids) == 0
	}
	return tgDone, slDone
}
