package discord

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/metnos/gateway/messenger"
)

// maxSkew is how far X-Signature-Timestamp may be from now, either way.
const maxSkew = 5 * time.Minute

func parsePublicKey(s string) (ed25519.PublicKey, error) {
	k, err := hex.DecodeString(s)
	if err != nil || len(k) != ed25519.PublicKeySize {
		return nil, errors.New("discord.public_key: want the application's public key, 64 hex digits")
	}
	return ed25519.PublicKey(k), nil
}

// writeError answers in the gateway's error shape (SPEC §7).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// interactions is POST /discord/interactions: every request is verified
// with the application's public key before anything reads it
// (https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers):
// Ed25519 over X-Signature-Timestamp followed by the raw body, the
// timestamp within five minutes of now. Anything else gets 401 and
// decides nothing. The answer goes back inline, at once; decisions run
// after it.
func (m *Messenger) interactions(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, messenger.MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "body over 64 KiB or unreadable")
		return
	}
	if why := m.verify(r, raw); why != "" {
		m.log.Warn("refused a Discord interaction", "why", why)
		writeError(w, http.StatusUnauthorized, "bad_signature", why)
		return
	}
	var i discordgo.Interaction
	if err := json.Unmarshal(raw, &i); err != nil || i.ID == "" {
		writeError(w, http.StatusBadRequest, "bad_interaction", "the body is not an interaction")
		return
	}
	rp := m.handle(r.Context(), &i)
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(rp.resp); err != nil {
		return
	}
	if rp.after != nil {
		m.goJob(rp.after)
	}
}

// verify checks the signature headers over raw; it returns why not, or "".
func (m *Messenger) verify(r *http.Request, raw []byte) string {
	ts := r.Header.Get("X-Signature-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "missing or malformed X-Signature-Timestamp"
	}
	if d := time.Since(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return fmt.Sprintf("X-Signature-Timestamp is %s from now", d.Round(time.Second))
	}
	// discordgo.VerifyInteraction reads the body; give it the one read.
	check := r.Clone(r.Context())
	check.Body = io.NopCloser(bytes.NewReader(raw))
	if !discordgo.VerifyInteraction(check, m.pubKey) {
		return "bad or missing X-Signature-Ed25519"
	}
	return ""
}
