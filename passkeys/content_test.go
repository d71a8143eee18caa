package passkeys_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/metnos/gateway/passkeys"
)

// TestContent_Exact: the signed content is the compact JSON of the
// issue's fields in their order, arg_keys sorted, expires_at RFC 3339 in
// UTC, escaped as json.Marshal escapes; its hash is lowercase hex; the
// challenge is sha256(ASCII hash || nonce).
func TestContent_Exact(t *testing.T) {
	c := passkeys.Content{ID: "r1", Agent: "a1", Capability: "fs:write", Target: "/srv/<x>&y", GrantTarget: "/srv/*",
		Autonomy: "Supervised", ArgKeys: []string{"path", "mode"}, Channel: "web", SenderID: "owner",
		ExpiresAt: passkeys.ContentTime(time.Date(2026, 11, 26, 21, 4, 5, 999, time.FixedZone("CET", 3600))),
		Decision:  "allow_always", Scope: "/srv/*", GrantAgent: "a1"}
	want := `{"id":"r1","agent":"a1","capability":"fs:write","target":"/srv/\u003cx\u003e\u0026y","grant_target":"/srv/*",` +
		`"autonomy":"Supervised","arg_keys":["mode","path"],"channel":"web","sender_id":"owner",` +
		`"expires_at":"2026-11-26T20:04:05Z","decision":"allow_always","scope":"/srv/*","for":"","session_id":"",` +
		`"grant_agent":"a1","v":2}`
	if got := string(c.JSON()); got != want {
		t.Fatalf("content\n got %s\nwant %s", got, want)
	}
	if c.ArgKeys[0] != "path" {
		t.Error("JSON sorted the caller's arg_keys in place")
	}
	if got := string((passkeys.Content{}).JSON()); got != `{"id":"","agent":"","capability":"","target":"","grant_target":"","autonomy":"","arg_keys":[],"channel":"","sender_id":"","expires_at":"","decision":"","scope":"","for":"","session_id":"","grant_agent":"","v":2}` {
		t.Errorf("empty content: %s", got)
	}
	sum := sha256.Sum256([]byte(want))
	hash := passkeys.ContentHash([]byte(want))
	if hash != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash %s", hash)
	}
	nonce := make([]byte, passkeys.NonceSize)
	nonce[0] = 7
	ch := sha256.Sum256(append([]byte(hash), nonce...))
	if got := passkeys.Challenge(hash, nonce); string(got) != string(ch[:]) {
		t.Fatal("challenge is not sha256(hash || nonce)")
	}
}
