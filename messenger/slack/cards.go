package slack

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
)

// Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks). Slack
// rejects the whole message (invalid_blocks) when one text is over its limit,
// so every dynamic text is cut to fit, with a visible marker. The limits are
// in characters; we count bytes, which is never more than characters, so a
// cut text always fits.
const (
	// SlackMaxSectionText is the limit of a section block's text (and of a
	// context element's text, which shares it).
	SlackMaxSectionText = 3000
	// SlackMaxFieldText is the limit of each text in a section's fields.
	SlackMaxFieldText = 2000
	// SlackMaxHeaderText is the limit of a header block's plain text.
	SlackMaxHeaderText = 150
	// SlackMaxConfirmText is the limit of a confirm dialog's text.
	SlackMaxConfirmText = 300
	// SlackMaxFallbackText bounds the top-level text: Slack accepts 40,000
	// characters, but it only shows in notifications and screen readers,
	// where a few lines are what helps.
	SlackMaxFallbackText = 3000
	// SlackMaxViewBlocks is the most blocks a Home tab view may hold.
	SlackMaxViewBlocks = 100
)

// The action ids of the card's buttons (SPEC §8). Interactivity payloads
// are checked against exactly these; anything else is refused.
const (
	SlackActionAllowOnce   = "approval_allow_once"
	SlackActionAllowAlways = "approval_allow_always"
	SlackActionDeny        = "approval_deny"
	// SlackActionAllowSession is Allow this session.
	SlackActionAllowSession = "approval_allow_session"
	// SlackActionAllowFor is the prefix of an Allow for button's action
	// id; the while follows ("approval_allow_for_1h").
	SlackActionAllowFor = "approval_allow_for_"
	// SlackActionScope is the static select of Allow always's scope: the
	// button reads it, and choosing in it re-renders the card so that the
	// button's confirm dialog names the chosen scope.
	SlackActionScope = "approval_scope"
	// SlackActionRevoke is the Revoke button of a grant on the Home tab.
	SlackActionRevoke = "grant_revoke"
	// SlackActionConfirmWeb is a step-up card's link to the web page:
	// Slack still sends its click, which decides nothing.
	SlackActionConfirmWeb = "approval_confirm_web"
)

// Block ids: an actions block's id names what its buttons act on, so a
// payload whose block_id and value disagree is refused as forged.
const (
	slackDecisionBlockPrefix = "approval:"
	slackRevokeBlockPrefix   = "grant:"
	// SlackOutcomeBlockID is the section that replaces the buttons of a
	// finished card.
	SlackOutcomeBlockID = "approval_outcome"
	// SlackProgressBlockID is the section of a pending card that shows the
	// quorum's progress and why an escalated card arrived.
	SlackProgressBlockID = "approval_progress"
)

var slackActions = map[approvals.Decision]string{
	approvals.AllowOnce: SlackActionAllowOnce, approvals.AllowAlways: SlackActionAllowAlways, approvals.Deny: SlackActionDeny,
	approvals.AllowSession: SlackActionAllowSession,
}

// SlackDecisionBlockID is the block_id of a request's actions block.
func SlackDecisionBlockID(requestID string) string { return slackDecisionBlockPrefix + requestID }

// SlackRevokeBlockID is the block_id of a grant's row on the Home tab.
func SlackRevokeBlockID(grantID int64) string {
	return slackRevokeBlockPrefix + strconv.FormatInt(grantID, 10)
}

// ParseSlackAction validates one button press from an interactivity
// payload: untrusted input, since anyone who can click can also craft a
// payload. The action id must be one of ours, the value a well-formed id,
// and the block id must name the same request or grant as the value.
func ParseSlackAction(blockID, actionID, value string) (cards.Callback, error) {
	if actionID == SlackActionRevoke {
		id, err := strconv.ParseInt(value, 10, 64)
		if err != nil || id <= 0 || strconv.FormatInt(id, 10) != value {
			return cards.Callback{}, fmt.Errorf("%w: bad grant id", cards.ErrBadCallback)
		}
		if blockID != SlackRevokeBlockID(id) {
			return cards.Callback{}, fmt.Errorf("%w: block_id does not match the grant", cards.ErrBadCallback)
		}
		return cards.Callback{GrantID: id}, nil
	}
	if actionID == SlackActionScope { // value: the selected option, a scope index ("e<i>": for every agent)
		id, ok := strings.CutPrefix(blockID, slackDecisionBlockPrefix)
		index, every := strings.CutPrefix(value, "e")
		i, okIndex := cards.StrictNat(index)
		if !ok || !cards.ValidRequestID(id) || !okIndex || i >= cards.MaxScopes {
			return cards.Callback{}, fmt.Errorf("%w: bad scope choice", cards.ErrBadCallback)
		}
		return cards.Callback{Menu: true, RequestID: id, Scope: int(i) + 1, EveryAgent: every}, nil
	}
	cb := cards.Callback{}
	switch w, ok := strings.CutPrefix(actionID, SlackActionAllowFor); {
	case ok:
		d, err := approvals.ParseWhile(w)
		if err != nil || approvals.FormatWhile(d) != w || d > cards.MaxWhile {
			return cards.Callback{}, fmt.Errorf("%w: bad while", cards.ErrBadCallback)
		}
		cb.Decision, cb.For = approvals.AllowFor, d
	case actionID == SlackActionAllowAlways:
		// "<id>:<i>": the scope the button's confirm dialog named;
		// "<id>:e<i>": that scope for every agent.
		if id, i, ok := strings.Cut(value, ":"); ok {
			i, cb.EveryAgent = strings.CutPrefix(i, "e")
			n, okIndex := cards.StrictNat(i)
			if !okIndex || n >= cards.MaxScopes {
				return cards.Callback{}, fmt.Errorf("%w: bad scope", cards.ErrBadCallback)
			}
			value, cb.Scope = id, int(n)+1
		}
		cb.Decision = approvals.AllowAlways
	default:
		for dec, a := range slackActions {
			if a == actionID {
				cb.Decision = dec
			}
		}
	}
	if cb.Decision == "" {
		return cards.Callback{}, fmt.Errorf("%w: unknown action_id", cards.ErrBadCallback)
	}
	if !cards.ValidRequestID(value) {
		return cards.Callback{}, fmt.Errorf("%w: bad request id", cards.ErrBadCallback)
	}
	if blockID != SlackDecisionBlockID(value) {
		return cards.Callback{}, fmt.Errorf("%w: block_id does not match the request", cards.ErrBadCallback)
	}
	cb.RequestID = value
	return cb, nil
}

// EscapeMrkdwn escapes the three characters Slack's mrkdwn gives meaning to
// in any position (https://docs.slack.dev/messaging/formatting-message-text#escaping).
// Without it an agent's intent could carry <!channel> or a link whose label
// hides its address.
func EscapeMrkdwn(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackMarker ends a text that was cut to fit a Slack limit.
const slackMarker = "… [truncated]"

// fitEscaped cuts an already escaped text to max bytes, never inside a rune
// or an &amp; entity, and marks the cut.
func fitEscaped(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(slackMarker)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if amp := strings.LastIndexByte(s[:cut], '&'); amp >= 0 && !strings.Contains(s[amp:cut], ";") {
		cut = amp
	}
	return s[:cut] + slackMarker
}

// fitPlain cuts a plain_text text (shown literally, never escaped) to max
// bytes with the marker.
func fitPlain(s string, max int) string { return cards.Truncate(s, max) }

// mrkdwn is a text object for dynamic content: verbatim, so Slack does not
// turn URLs, #channels or @names in an agent's text into links or mentions.
func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}

func plain(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, text, true, false)
}

// codeSpan shows a displayed text (see Display) in a code span, where
// Slack applies no formatting: escaped for mrkdwn, its line breaks folded,
// a backtick (which would end the span early) shown as the escape
// ⟦U+0060⟧, cut in the middle to fit max bytes with the cut recorded in cs
// under field.
func codeSpan(cs *cards.Cuts, field, s string, max int) string {
	s = strings.ReplaceAll(cards.OneLine(s), "`", "⟦U+0060⟧")
	return "`" + fitMrkdwn(cs, field, s, max-2) + "`"
}

// fitMrkdwn escapes a displayed text for mrkdwn and cuts it in the middle,
// never inside an escape or an entity, until it fits limit bytes (Slack
// counts characters; bytes are never fewer). The cut is recorded in cs.
func fitMrkdwn(cs *cards.Cuts, field, s string, limit int) string {
	out := EscapeMrkdwn(s)
	if len(out) <= limit {
		return out
	}
	n := utf8.RuneCountInString(s)
	for {
		n = min(n-1, n*limit/len(out))
		cut, k := cards.CutIn(s, max(n, 0), cs.Locale())
		if out = EscapeMrkdwn(cut); len(out) <= limit || n <= 0 {
			cs.Add(field, k)
			return out
		}
	}
}

// plainFact is a plain_text fact, "Label: value": agent-supplied text
// goes out as plain_text with emoji off, so no part of it can become a
// link, a mention, formatting or an emoji. value is a displayed text; it
// is folded to one line and cut to fit.
func plainFact(cs *cards.Cuts, label, value string, max int) *slack.TextBlockObject {
	if value == "" {
		value = "—"
	}
	head := label + ": "
	return slackPlain(head + cs.Cut(label, cards.OneLine(value), max-utf8.RuneCountInString(head)))
}

// slackPlain is a plain_text object with emoji codes left as typed.
func slackPlain(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, text, false, false)
}

// SlackMessage is a card as chat.postMessage and chat.update take it.
type SlackMessage struct {
	// Text is the fallback shown in notifications and read by screen readers.
	Text   string
	Blocks []slack.Block
}

// slackDate renders t as a Slack date token, which every reader sees in
// their own time zone (https://docs.slack.dev/messaging/formatting-message-text#date-formatting);
// the fallback, for clients that cannot render it, is the time in the
// gateway's zone with its abbreviation.
func slackDate(t time.Time, l locale.Locale) string {
	format := "{time}"
	if now := l.Now(); t.In(l.Zone()).YearDay() != now.YearDay() || t.In(l.Zone()).Year() != now.Year() {
		format = "{date_short_pretty} {time}"
	}
	return fmt.Sprintf("<!date^%d^%s|%s>", t.Unix(), format, l.Clock(t))
}

// slackExpires is an expiry for Slack: "expires in 9 min, <!date…|20:00 CET>".
func slackExpires(t time.Time, l locale.Locale) string {
	if d := t.Sub(l.Now()); d > 0 {
		return l.T("time.expires_in", l.In(d), slackDate(t, l))
	}
	return l.T("time.expired_at", slackDate(t, l))
}

// Slack renders the Block Kit card of c: header, the warning lines when
// Display had to escape anything, the facts as fields, a context line with
// the expiry and what Allow always would grant, the cut line when a field
// was cut, and the three buttons while pending; a finished card keeps the
// facts and shows the outcome instead of buttons. Every agent-supplied
// text is plain_text: Slack shows it as sent, never as a link, mention or
// formatting.
func Slack(c cards.Card) SlackMessage {
	l := c.Locale
	cs := cards.NewCuts(l)
	title := c.Title
	if c.Critical {
		title = "⚠️ " + title
	}
	capability := c.Capability
	if c.Critical {
		capability += " · " + l.T("label.critical")
	}
	vag := "—"
	if c.HasVaglio {
		vag = c.Vaglio
	}
	facts := []*slack.TextBlockObject{
		plainFact(&cs, l.T("label.agent"), c.Agent, SlackMaxFieldText),
		plainFact(&cs, l.T("label.level"), c.Level, SlackMaxFieldText),
		plainFact(&cs, l.T("label.capability"), capability, SlackMaxFieldText),
		plainFact(&cs, l.T("label.target"), c.Target, SlackMaxFieldText),
	}
	if c.HostASCII != "" {
		facts = append(facts, plainFact(&cs, l.T("label.host"), c.Host+" → "+c.HostASCII, SlackMaxFieldText))
	}
	facts = append(facts,
		plainFact(&cs, l.T("label.intent"), c.Intent, SlackMaxFieldText),
		plainFact(&cs, l.T("label.executor"), c.Executor, SlackMaxFieldText),
		plainFact(&cs, l.T("label.vaglio"), vag, SlackMaxFieldText))
	blocks := []slack.Block{slack.NewHeaderBlock(slackPlain(fitPlain(cards.OneLine(title), SlackMaxHeaderText)))}
	if w := c.Warnings(); len(w) > 0 {
		blocks = append(blocks, slack.NewContextBlock("approval_warning", mrkdwn(EscapeMrkdwn(strings.Join(w, "\n")))))
	}
	blocks = append(blocks, slack.NewSectionBlock(nil, facts, nil, slack.SectionBlockOptionBlockID("approval_facts")))
	if c.Summary != "" {
		blocks = append(blocks, slack.NewSectionBlock(plainFact(&cs, l.T("label.summary"), c.Summary, SlackMaxSectionText), nil, nil,
			slack.SectionBlockOptionBlockID("approval_summary")))
	}
	// The fallback text shows in notifications; the adapter sends it with
	// mrkdwn off, and it is escaped besides, so it stays plain too.
	fallback := l.T("slack.fallback", c.Title, cards.OneLine(c.Target))
	var tail []slack.Block
	if c.Pending {
		grant := l.T("card.no_allow_always", c.Capability)
		if c.AllowAlways {
			grant = cs.Cut(l.T("button.allow_always"), cards.OneLine(c.GrantPreview), SlackMaxSectionText-200)
		}
		if c.Escalation != "" || c.Progress != "" {
			var lines []string
			if c.Escalation != "" {
				lines = append(lines, EscapeMrkdwn(c.Escalation))
			}
			if c.Progress != "" {
				lines = append(lines, "*"+EscapeMrkdwn(c.Progress)+"*")
			}
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn(fitEscaped(strings.Join(lines, "\n"), SlackMaxSectionText)),
				nil, nil, slack.SectionBlockOptionBlockID(SlackProgressBlockID)))
		}
		blocks = append(blocks, slack.NewContextBlock("approval_context",
			mrkdwn("⏳ "+slackExpires(c.ExpiresAt, c.Locale)+" · "+l.T("label.request_lc")+" "+c.RequestID),
			slackPlain(grant)))
		if c.StepUp {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn("*"+EscapeMrkdwn(cards.StepUpLine(c))+"*"), nil, nil,
				slack.SectionBlockOptionBlockID("approval_step_up")))
		}
		tail = append(tail, slack.NewActionBlock(SlackDecisionBlockID(c.RequestID), slackButtons(c)...))
		fallback += ": " + l.T("slack.approval_needed")
	} else {
		text := cs.Cut(l.T("label.request"), cards.OneLine(c.StatusLine), SlackMaxSectionText/2)
		if c.Note != "" {
			text += "\n📝 " + cs.Cut(l.T("label.note"), cards.OneLine(c.Note), SlackMaxSectionText/2-10)
		}
		blocks = append(blocks,
			slack.NewSectionBlock(slackPlain(text), nil, nil, slack.SectionBlockOptionBlockID(SlackOutcomeBlockID)),
			slack.NewContextBlock("approval_context", mrkdwn(l.T("label.request_lc")+" "+c.RequestID)))
		fallback += ": " + c.StatusLine
	}
	if cs.Any() {
		blocks = append(blocks, slack.NewContextBlock("approval_cut", mrkdwn(slackCutLine(&cs, c))))
	}
	blocks = append(blocks, tail...)
	none := cards.NewCuts(l)
	return SlackMessage{Text: fitMrkdwn(&none, "", cards.OneLine(fallback), SlackMaxFallbackText), Blocks: blocks}
}

// slackCutLine says what was cut and where the whole request is: a link
// when web.public_url is set, else the path on the gateway's web page.
func slackCutLine(cs *cards.Cuts, c cards.Card) string {
	line := EscapeMrkdwn(cs.Line(c.Locale))
	if c.Linked() {
		return line + "<" + EscapeMrkdwn(c.PageURL) + "|" + EscapeMrkdwn(c.PageURL) + ">"
	}
	return line + "`" + EscapeMrkdwn(c.PageURL) + "`" + EscapeMrkdwn(c.Locale.T("card.not_linked"))
}

// slackButtons are the card's buttons, in the order of cards.Card.Buttons, with
// the scope select after Allow always when there is a choice.
func slackButtons(c cards.Card) []slack.BlockElement {
	l := c.Locale
	var out []slack.BlockElement
	if c.StepUp {
		// An allow needs the approver's passkey: a link button to the web
		// page (Slack only acknowledges its click), and Deny.
		if c.ConfirmButton() {
			out = append(out, slack.NewButtonBlockElement(SlackActionConfirmWeb, c.RequestID, plain(l.T("button.confirm_web"))).
				WithURL(c.ConfirmURL).WithStyle(slack.StylePrimary))
		}
		return append(out, slack.NewButtonBlockElement(slackActions[approvals.Deny], c.RequestID, plain(l.T("button.deny"))).
			WithStyle(slack.StyleDanger))
	}
	for _, b := range c.Buttons() {
		btn := slack.NewButtonBlockElement(slackActions[b.Decision], c.RequestID, plain(b.Label))
		switch b.Decision {
		case approvals.AllowOnce:
			btn = btn.WithStyle(slack.StylePrimary)
		case approvals.Deny:
			btn = btn.WithStyle(slack.StyleDanger)
		case approvals.AllowFor:
			btn = slack.NewButtonBlockElement(SlackActionAllowFor+b.While, c.RequestID, plain(b.Label))
		case approvals.AllowAlways:
			// Allow always writes a standing grant: say exactly what, once
			// more. The value names the scope the dialog names, so a
			// select changed after the dialog was drawn cannot slip
			// another scope under it.
			btn = slack.NewButtonBlockElement(SlackActionAllowAlways, c.RequestID+":"+slackScopeValue(c), plain(b.Label))
			btn = btn.WithConfirm(slack.NewConfirmationBlockObject(
				plain(l.T("slack.confirm_allow_always_title")),
				slackPlain(fitPlain(cards.OneLine(c.GrantPreview)+".", SlackMaxConfirmText)),
				plain(l.T("slack.confirm_allow_always")),
				plain(l.T("slack.cancel"))))
			out = append(out, btn)
			if len(c.Scopes) > 1 {
				out = append(out, slackScopeSelect(c))
			}
			continue
		}
		out = append(out, btn)
	}
	return out
}

// slackMaxOptionText is Block Kit's limit on an option's text.
const slackMaxOptionText = 75

// slackScopeSelect is the static select of Allow always's scope, the
// chosen one (ScopeChoice, the narrowest by default) shown selected.
// Option texts are plain text, cut with the marker at Slack's limit; the
// confirm dialog names the whole pattern.
func slackScopeSelect(c cards.Card) *slack.SelectBlockElement {
	opts := make([]*slack.OptionBlockObject, 0, 2*len(c.Scopes))
	for _, every := range []bool{false, true} {
		if every && c.Guarded {
			break
		}
		for i, sc := range c.Scopes {
			if sc == "*" {
				sc = c.Locale.T("card.any_target")
			}
			value := strconv.Itoa(i)
			if every {
				value, sc = "e"+value, c.Locale.T("button.scope_every", sc)
			}
			opts = append(opts, slack.NewOptionBlockObject(value, slackPlain(fitPlain(cards.OneLine(sc), slackMaxOptionText)), nil))
		}
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain(c.Locale.T("slack.scope_placeholder")),
		SlackActionScope, opts...)
	chosen := c.ScopeChoice
	if c.ScopeEvery && !c.Guarded {
		chosen += len(c.Scopes)
	}
	sel.InitialOption = opts[chosen]
	return sel
}

// SlackMarkup writes a digest or a notification for a Slack post without
// markdown: everything escaped (EscapeMrkdwn), nothing set apart.
var SlackMarkup cards.Markup = slackMarkup{}

type slackMarkup struct{}

func (slackMarkup) Escape(s string) string { return EscapeMrkdwn(s) }
func (slackMarkup) Code(s string) string   { return EscapeMrkdwn(s) }
func (slackMarkup) Link(u string) string   { return EscapeMrkdwn(u) }

// slackScopeValue is the chosen scope as the select's option value names
// it: its index, "e<index>" for every agent.
func slackScopeValue(c cards.Card) string {
	if c.ScopeEvery && !c.Guarded {
		return "e" + strconv.Itoa(c.ScopeChoice)
	}
	return strconv.Itoa(c.ScopeChoice)
}
