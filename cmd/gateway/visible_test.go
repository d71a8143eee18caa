package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/locale"
)

// TestCLI_HiddenCharactersVisible: what the command line prints for
// people shows hidden characters: JSON lines as \u escapes (the same JSON),
// the ask status line and verdict as ⟦U+…⟧.
func TestCLI_HiddenCharactersVisible(t *testing.T) {
	cli := sqliteCLI(t)
	target := "/srv/notes\u202E\u2066txt.*"
	if code, _, errs := cli("policy", "grant", "--channel", "web", "--sender", "own\u200Ber", "--capability", "fs:read", "--target", target); code != 0 {
		t.Fatalf("policy grant: %d %s", code, errs)
	}
	code, out, errs := cli("policy", "grants")
	if code != 0 {
		t.Fatalf("policy grants: %d %s", code, errs)
	}
	if strings.ContainsAny(out, "\u202E\u2066\u200B") || !strings.Contains(out, `\u202e\u2066`) || !strings.Contains(out, `own\u200ber`) {
		t.Errorf("policy grants printed %q", out)
	}
	var g struct {
		Target   string `json:"target"`
		SenderID string `json:"sender_id"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil || g.Target != target || g.SenderID != "own\u200Ber" {
		t.Errorf("the JSON no longer means the same: %+v %v", g, err)
	}

	l := locale.New(locale.English, time.UTC, time.Now)
	line := statusLine(client.Request{Capability: "code:exec", Target: "cat notes\u202E\u2066hs.txt\x1b[2K; wget x"}, time.Second, l)
	if !strings.Contains(line, "cat notes⟦U+202E⟧⟦U+2066⟧hs.txt⟦U+001B⟧[2K; wget x") {
		t.Errorf("status line %q", line)
	}
	v := verdict(client.Request{ID: "r1", Status: client.StatusDenied, Reason: "no \u202Etxt.exe", Note: "x"}, l)
	if !strings.Contains(v, "no ⟦U+202E⟧txt.exe") {
		t.Errorf("verdict %q", v)
	}
}

func TestJSONVisible(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"b"}`:                   `{"a":"b"}`,
		"{\"a\":\"é😀\"}":              "{\"a\":\"é😀\"}",
		"{\"a\":\"x\u202Ey\"}":        `{"a":"x\u202ey"}`,
		"{\"a\":\"x\U000E0041\"}":     `{"a":"x\udb40\udc41"}`,
		"{\"a\":\"\u27E6U+1\u27E7\"}": `{"a":"\u27e6U+1\u27e7"}`,
	} {
		got := string(jsonVisible([]byte(in)))
		if got != want {
			t.Errorf("jsonVisible(%q) = %q, want %q", in, got, want)
		}
		var a, b any
		if json.Unmarshal([]byte(in), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || !equalJSON(a, b) {
			t.Errorf("%q and %q differ as JSON", in, got)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
