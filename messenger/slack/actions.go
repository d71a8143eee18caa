package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/policy"
)

// interactionKey identifies one click whatever carries it: Slack gives
// every click its own trigger_id and action_ts.
func interactionKey(ic slackapi.InteractionCallback) string {
	acts := ic.ActionCallback.BlockActions
	if len(acts) == 0 || ic.TriggerID == "" && acts[0].ActionTs == "" {
		return ""
	}
	a := acts[0]
	return strings.Join([]string{"click", ic.User.ID, ic.TriggerID, a.ActionTs, a.ActionID, a.Value}, "|")
}

func commandKey(c slackapi.SlashCommand) string {
	if c.TriggerID == "" {
		return ""
	}
	return "command|" + c.TriggerID
}

func eventKey(id string) string {
	if id == "" {
		return ""
	}
	return "event|" + id
}

// replyTo is where a private answer goes: an ephemeral message to user in
// channel, or the response_url Slack gave with the request.
type replyTo struct {
	channel, user, responseURL string
	preferResponseURL          bool // commands: the channel may be a DM the bot is not in
}

func clickReply(ic slackapi.InteractionCallback) replyTo {
	ch := ic.Container.ChannelID
	if ch == "" {
		ch = ic.Channel.ID
	}
	return replyTo{channel: ch, user: ic.User.ID, responseURL: ic.ResponseURL}
}

// reply sends text (mrkdwn, dynamic parts already escaped) to one person
// only (https://docs.slack.dev/reference/methods/chat.postEphemeral, or the
// response_url). Best effort: a failure is logged.
func (m *Messenger) reply(ctx context.Context, to replyTo, text string) {
	viaURL := func() error {
		_, _, err := m.api.PostMessageContext(ctx, "", slackapi.MsgOptionText(text, false),
			slackapi.MsgOptionResponseURL(to.responseURL, slackapi.ResponseTypeEphemeral))
		return err
	}
	viaEphemeral := func() error {
		_, err := m.api.PostEphemeralContext(ctx, to.channel, to.user, slackapi.MsgOptionText(text, false))
		return err
	}
	var tries []func() error
	urlOK := to.responseURL != "" && m.trustedResponseURL(to.responseURL)
	if to.preferResponseURL && urlOK {
		tries = append(tries, viaURL)
	}
	if to.channel != "" && to.user != "" {
		tries = append(tries, viaEphemeral)
	}
	if !to.preferResponseURL && urlOK {
		tries = append(tries, viaURL)
	}
	var err error
	for _, try := range tries {
		if err = try(); err == nil {
			return
		}
	}
	if err == nil {
		err = errors.New("no channel and no response_url to answer on")
	}
	m.log.Warn("could not answer privately", "user_id", to.user, "err", err)
}

// trustedResponseURL: response URLs come inside signed payloads, but we
// still only POST to Slack (or to the configured API host, for tests), so
// a payload can never point the gateway at an internal address.
func (m *Messenger) trustedResponseURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" && (u.Host == "hooks.slack.com" || strings.HasSuffix(u.Host, ".slack.com")) {
		return true
	}
	return u.Scheme == m.apiHost.Scheme && u.Host == m.apiHost.Host
}

// handleInteraction acts on one verified, first-time click: validate it,
// check who clicked, decide, and tell the clicker privately when anything
// is refused. The card itself is edited by the dispatcher, like every
// other card of the request.
func (m *Messenger) handleInteraction(ctx context.Context, ic slackapi.InteractionCallback) {
	if ic.Type != slackapi.InteractionTypeBlockActions {
		m.log.Warn("ignored an unexpected Slack interaction", "type", string(ic.Type), "user_id", ic.User.ID)
		return
	}
	if !m.ourTeam(ctx, ic.Team.ID) {
		return // another workspace: not even an answer
	}
	to := clickReply(ic)
	if to.channel != "" && to.channel != m.cfg.ChannelID {
		// Cards are posted to slack.channel_id only: a click said to
		// come from elsewhere is not on one of our cards.
		m.log.Warn("refused a Slack click from another channel than the cards'", "user_id", ic.User.ID,
			"chat_id", fmt.Sprintf("%.32q", to.channel))
		return
	}
	answer := func(text string) {
		if to.channel == "" && to.responseURL == "" && ic.View.ID != "" {
			// A click on the Home tab: Slack gives no way to answer it
			// privately, so show the tab as it now is instead.
			m.publishHome(ctx, ic.User.ID)
			return
		}
		m.reply(ctx, to, text)
	}
	acts := ic.ActionCallback.BlockActions
	if len(acts) != 1 {
		m.log.Warn("refused a Slack interaction with several actions", "user_id", ic.User.ID, "actions", len(acts))
		answer(m.loc.T("msg.not_ours"))
		return
	}
	a := acts[0]
	if a.ActionID == SlackActionConfirmWeb {
		return // a step-up card's link: the browser opened the page; nothing to decide
	}
	value := a.Value
	if a.ActionID == SlackActionScope {
		value = a.SelectedOption.Value // a select's choice
	}
	cb, err := ParseSlackAction(a.BlockID, a.ActionID, value)
	if err != nil {
		m.log.Warn("refused an unexpected Slack action", "user_id", ic.User.ID,
			"action_id", fmt.Sprintf("%.64q", a.ActionID), "err", err)
		answer(m.loc.T("msg.not_ours"))
		return
	}
	if cb.Revoke() {
		m.revoke(ctx, ic.User.ID, ic.User.Name, cb.GrantID, answer)
		return
	}
	// Who may decide is the request's route's to say (people outside
	// slack.approvers, members of a user group): the service checks.
	actor := approvals.Actor{Channel: Name, ID: ic.User.ID, Name: ic.User.Name, Outsider: !m.approver[ic.User.ID]}
	if cb.Menu {
		m.chooseScope(ctx, ic, cb, answer)
		return
	}
	ch := approvals.Choice{Decision: cb.Decision, Duration: cb.For, EveryAgent: cb.EveryAgent}
	if cb.Scope > 0 {
		// The button names the scope its confirm dialog named; the select
		// beside it must still say the same, or the person confirmed one
		// scope while the select showed another.
		if st := ic.BlockActionState; st != nil {
			if sel, ok := st.Values[a.BlockID][SlackActionScope]; ok &&
				sel.SelectedOption.Value != "" && sel.SelectedOption.Value != scopeValue(cb) {
				answer(m.loc.T("slack.scope_changed"))
				return
			}
		}
		cur, err := m.svc.Get(ctx, cb.RequestID)
		if err == nil {
			ch, err = approvals.ChoiceOfScope(cur, ch, strconv.Itoa(cb.Scope-1))
		}
		if err != nil && !errors.Is(err, approvals.ErrNotFound) {
			answer(m.decideRefusal(err, cb.RequestID))
			return
		}
	}
	r, err := m.svc.DecideChoice(ctx, cb.RequestID, ch, actor)
	if err != nil {
		answer(m.decideRefusal(err, cb.RequestID))
		return
	}
	if !r.Status.Finished() {
		answer(m.loc.T("msg.counted", EscapeMrkdwn(cards.Progress(r, m.loc))))
		m.log.Info("approval counted in slack", "request_id", r.ID, "decision", string(cb.Decision), "user_id", ic.User.ID)
		return
	}
	m.log.Info("decided in slack", "request_id", r.ID, "decision", string(cb.Decision), "user_id", ic.User.ID)
}

// scopeValue is the select's option value a scope callback names.
func scopeValue(cb cards.Callback) string {
	if cb.EveryAgent {
		return "e" + strconv.Itoa(cb.Scope-1)
	}
	return strconv.Itoa(cb.Scope - 1)
}

// chooseScope answers a choice in a card's scope select: the card is drawn
// again with that scope chosen, so Allow always's confirm dialog names it.
// It decides nothing. Only a card in a channel is redrawn (the Home tab's
// cards keep the narrowest scope).
func (m *Messenger) chooseScope(ctx context.Context, ic slackapi.InteractionCallback, cb cards.Callback, answer func(string)) {
	r, err := m.svc.Get(ctx, cb.RequestID)
	if err != nil {
		answer(m.decideRefusal(err, cb.RequestID))
		return
	}
	if r.Status.Finished() {
		return // the dispatcher has redrawn, or is redrawing, the finished card
	}
	c := m.card(r)
	if cb.Scope-1 >= len(c.Scopes) {
		answer(m.decideRefusal(approvals.ErrNotOffered, cb.RequestID))
		return
	}
	ch, ts := ic.Container.ChannelID, ic.Container.MessageTs
	if ch == "" || ts == "" {
		return
	}
	chosen := c.WithScope(cb.Scope - 1)
	if cb.EveryAgent {
		if c.Guarded {
			answer(m.decideRefusal(approvals.ErrNotOffered, cb.RequestID))
			return
		}
		chosen = c.WithEveryScope(cb.Scope - 1)
	}
	msg := Slack(chosen)
	if _, _, _, err := m.api.UpdateMessageContext(ctx, ch, ts, slackapi.MsgOptionText(msg.Text, false),
		slackapi.MsgOptionDisableMarkdown(), slackapi.MsgOptionBlocks(msg.Blocks...)); err != nil {
		m.log.Warn("could not redraw the card with the chosen scope", "request_id", r.ID, "err", err)
	}
}

// decideRefusal renders cards.Refusal's words for a decision that was
// not recorded, and logs what deserves it.
func (m *Messenger) decideRefusal(err error, id string) string {
	return EscapeMrkdwn(messenger.Refusal(m.log, Name, err, id, m.loc))
}

// revoke is a Revoke click on the Home tab or /approvals revoke: admins
// only. answer says how it went to the person (privately, or by showing
// their Home tab again).
func (m *Messenger) revoke(ctx context.Context, userID, userName string, id int64, answer func(string)) {
	if !m.admin[userID] {
		m.log.Warn("refused a revoke from a non-admin", "user_id", userID, "grant_id", id)
		answer(m.loc.T("slack.not_admin"))
		return
	}
	changed, err := m.svc.RevokeGrant(ctx, id, approvals.Actor{Channel: Name, ID: userID, Name: userName})
	switch {
	case errors.Is(err, approvals.ErrPolicyStepUp):
		m.log.Warn("refused a revoke: policy_step_up is on", "grant_id", id, "user_id", userID)
		text, _ := cards.Refusal(err, m.loc)
		answer(EscapeMrkdwn(text))
		return
	case err != nil:
		m.log.Error("revoke from slack failed", "grant_id", id, "err", err)
		answer(m.loc.T("msg.internal"))
		return
	case changed:
		m.log.Info("grant revoked in slack", "grant_id", id, "user_id", userID)
		answer(m.loc.T("msg.revoked", id))
	default:
		answer(m.loc.T("msg.revoke_inactive", id))
	}
	m.homesChanged()
}

// handleEvent acts on one Events API event (HTTP or Socket Mode).
func (m *Messenger) handleEvent(raw []byte) {
	var ev struct {
		Type string `json:"type"`
		User string `json:"user"`
		Tab  string `json:"tab"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Type != "app_home_opened" || ev.Tab != "home" || ev.User == "" {
		return
	}
	m.watchHome(ev.User)
	m.goJob(func(ctx context.Context) { m.publishHome(ctx, ev.User) })
}

// activeGrants lists what /approvals grants and the Home tab show.
func (m *Messenger) activeGrants(ctx context.Context, sender string, n int) ([]policy.Grant, bool, error) {
	gs, err := m.svc.Grants().List(ctx, policy.GrantFilter{SenderID: sender, Limit: n + 1})
	if err != nil {
		return nil, false, err
	}
	if len(gs) > n {
		return gs[:n], true, nil
	}
	return gs, false, nil
}

// pendingCards lists what /approvals pending and the Home tab show.
func (m *Messenger) pendingCards(ctx context.Context, n int) ([]cards.Card, bool, error) {
	return messenger.PendingCards(ctx, m.svc, Name, n, m.card)
}
