package discord_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger/discord"
	"github.com/metnos/gateway/messenger/discord/discordtest"
)

// FuzzDiscordCard renders cards whose agent strings are arbitrary: the
// content always fits Discord's 2,000 characters, never draws a mention,
// role, channel, emoji or timestamp pill (discordtest.Pills, which reads
// code spans, blocks and escapes as Discord does), keeps the request id
// on its last line, and every custom_id is ours and within 100
// characters; the scope buttons likewise. A digest suggesting the same
// agent and target draws no pill either.
func FuzzDiscordCard(f *testing.F) {
	for _, s := range [][3]string{
		{"@everyone", "<@123> <@&456> <#789>", "a1"},
		{"/srv/`x`/<@1>", "```\n@here\n```", "ag`ent"},
		{"\\<@123>", "\\`<@1>\\`", "\\"},
		{"<t:1700000000:R> <:pog:1234567>", "</approvals:1234567>", "x"},
		{strings.Repeat("<@1>", 700), strings.Repeat("@everyone ", 500), strings.Repeat("a", 64)},
		{"line\nbreak <@1>\n", "[x](https://evil.example) **b** ~~s~~ ||spoiler|| > quote", "# h"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	loc := locale.New(locale.Lang("en"), time.UTC, nil)
	f.Fuzz(func(t *testing.T, target, intent, agent string) {
		r := approvals.Request{ID: "rabcdefghijklmnopqrstuvwxyz", Agent: agent, Capability: "fs:write", Target: target,
			Intent: intent, Executor: intent, Summary: target, Status: approvals.StatusPending,
			ExpiresAt: time.Now().Add(time.Minute), Scopes: []string{target, "/srv/*", "*"}, GrantTarget: target}
		for _, c := range []cards.Card{cards.New(r, loc), cards.New(r, loc).WithPage("https://gw.example.com")} {
			for _, m := range []discord.DiscordMessage{discord.Discord(c), discord.DiscordScopes(c)} {
				if n := cards.UTF16Len(m.Content); n > discord.DiscordMaxContent {
					t.Fatalf("content of %d characters", n)
				}
				if p := discordtest.Pills(m.Content); len(p) > 0 {
					t.Fatalf("draws %q:\n%s", p, m.Content)
				}
				if !strings.HasSuffix(m.Content, "`"+r.ID+"`") {
					t.Fatalf("the last line lost the request id:\n%s", m.Content)
				}
				for _, id := range (discordtest.Message{Components: mustJSON(t, m.Components)}).Buttons() {
					cb, err := cards.Decode(id)
					if err != nil || len(id) > discord.DiscordMaxCustomID || (cb.RequestID != r.ID) {
						t.Fatalf("custom_id %q: %+v %v", id, cb, err)
					}
				}
			}
		}
		d := approvals.Digest{From: time.Now(), To: time.Now(), Link: "https://gw.example.com/#suggestions",
			Suggestions: []approvals.DigestSuggestion{{Agent: agent, Capability: "fs:write", Target: target, Count: 3}}}
		if s := discord.DiscordText(cards.NewDigest(d, loc).Render(loc, discord.DiscordMarkup)); cards.UTF16Len(s) > discord.DiscordMaxContent || len(discordtest.Pills(s)) > 0 {
			t.Fatalf("digest draws %q:\n%s", discordtest.Pills(s), s)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
