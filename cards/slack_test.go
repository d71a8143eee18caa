package cards_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	. "github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// The -update flag is shared with the other renderers' golden tests, which
// may declare it as a package variable (initialised before any init runs).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files")
	}
}

func slackUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

var slackT0 = time.Date(2026, 3, 14, 14, 3, 0, 0, time.UTC)

// slackLocale shows Slack cards in New York, a minute after slackT0.
var slackLocale = locale.New(locale.English, mustLoad("America/New_York"), func() time.Time { return slackT0.Add(time.Minute) })

func mustLoad(name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return z
}

func slackRequest(mut func(*approvals.Request)) approvals.Request {
	grantExp := slackT0.Add(90 * 24 * time.Hour)
	r := approvals.Request{
		ID: "rabcdefgh234567", CallID: "c1", Agent: "metnos", Status: approvals.StatusPending,
		Outcome: policy.ApprovalRequired, Reason: "approval required", Capability: "fs:write", Critical: true,
		Target: "/home/roberto/invoices/04.pdf", GrantTarget: "/home/roberto/invoices/*", Autonomy: policy.Supervised,
		Channel: "slack", SenderID: "U0ROBERTO", Intent: "save the April invoice", Executor: "invoice_saver",
		Vaglio: &vaglio.Verdict{Approved: true, Score: 0.80, JudgeKind: vaglio.RuleJudgeKind,
			Reason:  "approved: score 0.80 (rule-based-v1: base 0.70; +0.10 intent names the executor)",
			Factors: []string{vaglio.FactorIntentNamesExecutor}},
		CreatedAt: slackT0, ExpiresAt: slackT0.Add(10 * time.Minute), GrantExpiresAt: &grantExp,
	}
	if mut != nil {
		mut(&r)
	}
	return r
}

func slackDecided(st approvals.Status, d approvals.Decision, by string) func(*approvals.Request) {
	return func(r *approvals.Request) {
		at := slackT0.Add(2 * time.Minute)
		r.Status, r.DecidedBy, r.DecidedAt = st, by, &at
		if d != "" {
			r.Decision = &d
		}
	}
}

func slackGolden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep < > & readable: escaping is what is under test
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "slack", name+".golden")
	if slackUpdating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cards -run Slack -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./cards -run Slack -update to accept):\n%s", path, got)
	}
}

func TestSlack_Golden(t *testing.T) {
	long := strings.Repeat("/very/long/segment", 250) // 4500 bytes
	grantID := int64(12)
	tests := []struct {
		name string
		req  approvals.Request
	}{
		{"pending", slackRequest(nil)},
		{"pending_no_allow_always", slackRequest(func(r *approvals.Request) {
			r.Capability, r.Target, r.GrantTarget, r.GrantExpiresAt = "code:exec", "git push origin main", "", nil
			r.Summary = "push the release branch"
		})},
		{"pending_escaped", slackRequest(func(r *approvals.Request) {
			r.Target = "/tmp/`rm -rf`/<!channel>&x"
			r.GrantTarget = "/tmp/*"
			r.Intent = "ping <!here> and <https://evil.example|click me> & *bold*"
			r.Executor = "<@U123>"
		})},
		{"pending_truncated", slackRequest(func(r *approvals.Request) {
			r.Target, r.GrantTarget = long, long
			r.Summary = strings.Repeat("a&b<", 1000)
		})},
		{"allowed_once", slackRequest(slackDecided(approvals.StatusAllowed, approvals.AllowOnce, "slack:roberto (U0ROBERTO)"))},
		{"allowed_always", slackRequest(func(r *approvals.Request) {
			slackDecided(approvals.StatusAllowed, approvals.AllowAlways, "telegram:Roberto (42)")(r)
			r.GrantID = &grantID
		})},
		{"denied", slackRequest(func(r *approvals.Request) {
			slackDecided(approvals.StatusDenied, approvals.Deny, "web:owner")(r)
			r.Note = "not <this> one"
		})},
		{"expired", slackRequest(slackDecided(approvals.StatusExpired, "", "timeout"))},
		{"cancelled", slackRequest(slackDecided(approvals.StatusCancelled, "", "agent:metnos"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := slackcards.Slack(New(tt.req, slackLocale))
			slackCheckLimits(t, msg.Blocks)
			slackGolden(t, tt.name, map[string]any{"text": msg.Text, "blocks": msg.Blocks})
		})
	}
}

func slackGrants() []policy.Grant {
	exp := slackT0.Add(90 * 24 * time.Hour)
	used := slackT0.Add(time.Hour)
	return []policy.Grant{
		{ID: 12, Channel: "slack", SenderID: "U0ROBERTO", Capability: "fs:write", Target: "/home/roberto/invoices/*",
			GrantedAt: slackT0, ExpiresAt: &exp, GrantedBy: "slack:roberto (U0ROBERTO)", LastUsedAt: &used, Active: true},
		{ID: 7, Channel: "web", SenderID: "owner", Capability: "network:http", Target: "*.example.com",
			GrantedAt: slackT0, GrantedBy: "cli", Active: true},
	}
}

func TestSlackHomeView_Golden(t *testing.T) {
	pending := []Card{New(slackRequest(nil), slackLocale), New(slackRequest(func(r *approvals.Request) {
		r.ID, r.Capability, r.Target, r.GrantTarget = "rzzzzzzzz234567", "code:exec", "make deploy", ""
	}), slackLocale)}
	tests := []struct {
		name string
		home slackcards.SlackHome
	}{
		{"home_admin", slackcards.SlackHome{Approver: true, Admin: true, UserID: "U0ROBERTO", Pending: pending, Grants: slackGrants(), Locale: slackLocale}},
		{"home_approver", slackcards.SlackHome{Approver: true, UserID: "U0ANNA", Pending: pending, Grants: slackGrants(), MoreGrants: true, Locale: slackLocale}},
		{"home_empty", slackcards.SlackHome{Approver: true, UserID: "U0ANNA", Locale: slackLocale}},
		{"home_stranger", slackcards.SlackHome{UserID: "U0<EVE>", Locale: slackLocale}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := slackcards.SlackHomeView(tt.home)
			slackCheckLimits(t, v.Blocks.BlockSet)
			slackGolden(t, tt.name, v)
		})
	}
}

func TestSlackLists_Golden(t *testing.T) {
	pending := []Card{New(slackRequest(nil), slackLocale)}
	slackGolden(t, "list_pending", map[string]string{
		"pending":      slackcards.SlackPendingText(pending, true, slackLocale),
		"none_pending": slackcards.SlackPendingText(nil, false, slackLocale),
		"grants":       slackcards.SlackGrantsText(slackGrants(), false, slackLocale),
		"no_grants":    slackcards.SlackGrantsText(nil, false, slackLocale),
	})
}

func TestSlack_Buttons(t *testing.T) {
	t.Run("three buttons, value is the request id", func(t *testing.T) {
		msg := slackcards.Slack(New(slackRequest(nil), slackLocale))
		acts := slackActionBlocks(msg.Blocks)
		if len(acts) != 1 {
			t.Fatalf("want one actions block, got %d", len(acts))
		}
		a := acts[0]
		if a.BlockID != slackcards.SlackDecisionBlockID("rabcdefgh234567") {
			t.Errorf("block_id %q", a.BlockID)
		}
		var ids []string
		for _, e := range a.Elements.ElementSet {
			b := e.(*slack.ButtonBlockElement)
			ids = append(ids, b.ActionID)
			if want := map[bool]string{true: "rabcdefgh234567:0", false: "rabcdefgh234567"}[b.ActionID == slackcards.SlackActionAllowAlways]; b.Value != want {
				t.Errorf("%s value %q", b.ActionID, b.Value)
			}
			switch b.ActionID {
			case slackcards.SlackActionAllowOnce:
				if b.Style != slack.StylePrimary {
					t.Errorf("allow once style %q", b.Style)
				}
			case slackcards.SlackActionAllowAlways:
				if b.Confirm == nil || !strings.Contains(b.Confirm.Text.Text, "/home/roberto/invoices/*") {
					t.Errorf("allow always needs a confirm naming the grant: %+v", b.Confirm)
				}
			case slackcards.SlackActionDeny:
				if b.Style != slack.StyleDanger {
					t.Errorf("deny style %q", b.Style)
				}
			}
		}
		if strings.Join(ids, ",") != "approval_allow_once,approval_allow_always,approval_deny" {
			t.Errorf("buttons %v", ids)
		}
	})
	t.Run("no allow always for always capabilities", func(t *testing.T) {
		msg := slackcards.Slack(New(slackRequest(func(r *approvals.Request) { r.Capability = "mail:send" }), slackLocale))
		for _, e := range slackActionBlocks(msg.Blocks)[0].Elements.ElementSet {
			if e.(*slack.ButtonBlockElement).ActionID == slackcards.SlackActionAllowAlways {
				t.Error("mail:send card offers Allow always")
			}
		}
	})
	t.Run("finished cards have no buttons", func(t *testing.T) {
		for _, st := range []approvals.Status{approvals.StatusAllowed, approvals.StatusDenied, approvals.StatusExpired, approvals.StatusCancelled} {
			msg := slackcards.Slack(New(slackRequest(slackDecided(st, "", "web:owner")), slackLocale))
			if n := len(slackActionBlocks(msg.Blocks)); n != 0 {
				t.Errorf("%s: %d actions blocks", st, n)
			}
		}
	})
}

func slackActionBlocks(blocks []slack.Block) []*slack.ActionBlock {
	var out []*slack.ActionBlock
	for _, b := range blocks {
		if a, ok := b.(*slack.ActionBlock); ok {
			out = append(out, a)
		}
	}
	return out
}

func TestParseSlackAction(t *testing.T) {
	const id = "rabcdefgh234567"
	tests := []struct {
		name                     string
		blockID, actionID, value string
		want                     Callback
		ok                       bool
	}{
		{"allow once", "approval:" + id, "approval_allow_once", id, Callback{Decision: approvals.AllowOnce, RequestID: id}, true},
		{"allow always", "approval:" + id, "approval_allow_always", id, Callback{Decision: approvals.AllowAlways, RequestID: id}, true},
		{"deny", "approval:" + id, "approval_deny", id, Callback{Decision: approvals.Deny, RequestID: id}, true},
		{"revoke", "grant:12", "grant_revoke", "12", Callback{GrantID: 12}, true},
		{"unknown action", "approval:" + id, "approval_allow_forever", id, Callback{}, false},
		{"empty action", "approval:" + id, "", id, Callback{}, false},
		{"bad request id", "approval:R!", "approval_deny", "R!", Callback{}, false},
		{"upper case id", "approval:RABC", "approval_deny", "RABC", Callback{}, false},
		{"block of another request", "approval:rother", "approval_deny", id, Callback{}, false},
		{"missing block id", "", "approval_deny", id, Callback{}, false},
		{"revoke zero", "grant:0", "grant_revoke", "0", Callback{}, false},
		{"revoke padded", "grant:012", "grant_revoke", "012", Callback{}, false},
		{"revoke other block", "grant:13", "grant_revoke", "12", Callback{}, false},
		{"revoke with a request id", "approval:" + id, "grant_revoke", id, Callback{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := slackcards.ParseSlackAction(tt.blockID, tt.actionID, tt.value)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadCallback) {
				t.Errorf("err %v is not ErrBadCallback", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEscapeMrkdwn(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<!channel>", "&lt;!channel&gt;"},
		{"a & b", "a &amp; b"},
		{"&amp;", "&amp;amp;"},
		{"<https://x|y>", "&lt;https://x|y&gt;"},
	}
	for _, tt := range tests {
		if got := slackcards.EscapeMrkdwn(tt.in); got != tt.want {
			t.Errorf("slackcards.EscapeMrkdwn(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

var cutMarkerRE = regexp.MustCompile(` ⟦… [0-9,]+ characters cut …⟧ `)

func TestSlack_CutNeverSplitsAnEntityOrEscape(t *testing.T) {
	for n := 280; n < 300; n++ {
		c := New(slackRequest(func(r *approvals.Request) {
			r.Target = strings.Repeat("x", n) + strings.Repeat("<é&\u202e", 200)
		}), slackLocale)
		text := slackcards.SlackPendingText([]Card{c}, false, slackLocale)
		start := strings.Index(text, "`x")
		span := text[start : start+1+strings.Index(text[start+1:], "`")+1]
		if !strings.Contains(span, "characters cut") || !utf8.ValidString(span) || len(span) > 300 {
			t.Fatalf("n=%d: bad cut, %d bytes: %q", n, len(span), span)
		}
		for _, part := range cutMarkerRE.Split(span, -1) {
			if i := strings.LastIndexByte(part, '&'); i >= 0 && !strings.Contains(part[i:], ";") {
				t.Fatalf("n=%d: split entity in %q", n, part)
			}
			if strings.Count(part, "⟦") != strings.Count(part, "⟧") {
				t.Fatalf("n=%d: split escape in %q", n, part)
			}
		}
	}
}

// slackCheckLimits walks the rendered JSON and checks every text against its
// Slack limit; a card over any limit is refused by Slack as a whole.
func slackCheckLimits(t *testing.T, blocks []slack.Block) {
	t.Helper()
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var bs []map[string]any
	if err := json.Unmarshal(raw, &bs); err != nil {
		t.Fatal(err)
	}
	textOf := func(v any) string {
		m, _ := v.(map[string]any)
		s, _ := m["text"].(string)
		return s
	}
	check := func(what, s string, max int) {
		if n := utf8.RuneCountInString(s); n > max {
			t.Errorf("%s: %d characters, limit %d", what, n, max)
		}
	}
	for _, b := range bs {
		switch b["type"] {
		case "header":
			check("header", textOf(b["text"]), slackcards.SlackMaxHeaderText)
		case "section":
			check("section text", textOf(b["text"]), slackcards.SlackMaxSectionText)
			fields, _ := b["fields"].([]any)
			if len(fields) > 10 {
				t.Errorf("%d fields, limit 10", len(fields))
			}
			for _, f := range fields {
				check("field", textOf(f), slackcards.SlackMaxFieldText)
			}
		case "context":
			els, _ := b["elements"].([]any)
			for _, e := range els {
				check("context", textOf(e), slackcards.SlackMaxSectionText)
			}
		}
	}
	if len(bs) > slackcards.SlackMaxViewBlocks {
		t.Errorf("%d blocks, limit %d", len(bs), slackcards.SlackMaxViewBlocks)
	}
}

// FuzzSlack: whatever an agent sends, the card fits Slack's limits and no
// dynamic text becomes a link, mention or broadcast: the only "<" in any
// text is our own date token.
func FuzzSlack(f *testing.F) {
	f.Add("/tmp/x", "intent", "exec", "summary")
	f.Add("<!channel>", "<@U1|x>", "&&&", strings.Repeat("<", 4000))
	f.Add(strings.Repeat("`", 5000), "é", "\n", "")
	f.Fuzz(func(t *testing.T, target, intent, executor, summary string) {
		r := slackRequest(func(r *approvals.Request) {
			r.Target, r.GrantTarget, r.Intent, r.Executor, r.Summary = target, target, intent, executor, summary
		})
		msg := slackcards.Slack(New(r, slackLocale))
		slackCheckLimits(t, msg.Blocks)
		raw, _ := json.Marshal(msg.Blocks)
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if v["type"] == "mrkdwn" {
					s := strings.ReplaceAll(v["text"].(string), "<!date^", "")
					if strings.Contains(s, "<") {
						t.Fatalf("unescaped < in %q", v["text"])
					}
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		var tree any
		_ = json.Unmarshal(raw, &tree)
		walk(tree)
		if strings.Contains(strings.ReplaceAll(msg.Text, "<!date^", ""), "<") {
			t.Fatalf("unescaped < in fallback %q", msg.Text)
		}
	})
}
