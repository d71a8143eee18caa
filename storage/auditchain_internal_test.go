package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestRowHash_AsTheChainsDefinition: the hash the writer computes for a
// row in one buffer is hex(sha256(previous hash as 32 bytes ‖ netstrings
// of the row's texts)), as the top of auditchain.go defines it and
// `audit verify` recomputes it (chainHash over canonical), for random
// rows and predecessors, the genesis row's ("") included; a malformed
// predecessor (bad hex, wrong length, odd length) fails both alike.
func TestRowHash_AsTheChainsDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 39))
	text := func() string {
		const chars = "aZ09:,{}\"é\x00 "
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteByte(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	reference := func(prev string, fields [6]string) (string, bool) {
		p := make([]byte, sha256.Size)
		if prev != "" {
			b, err := hex.DecodeString(prev)
			if err != nil || len(b) != sha256.Size {
				return "", false
			}
			p = b
		}
		h := sha256.New()
		h.Write(p)
		for _, f := range fields {
			h.Write([]byte(strconv.Itoa(len(f)) + ":" + f + ","))
		}
		return hex.EncodeToString(h.Sum(nil)), true
	}
	for i := range 2000 {
		var prev string
		switch i % 5 {
		case 0: // genesis
		case 1: // upper case is hex too
			sum := sha256.Sum256([]byte(text()))
			prev = strings.ToUpper(hex.EncodeToString(sum[:]))
		case 2: // malformed
			prev = [...]string{"zz", "abc", strings.Repeat("0", 62), strings.Repeat("g", 64), strings.Repeat("0", 66)}[rng.IntN(5)]
		default:
			sum := sha256.Sum256([]byte(text()))
			prev = hex.EncodeToString(sum[:])
		}
		f := [6]string{text(), text(), text(), text(), text(), text()}
		want, ok := reference(prev, f)
		got, err := rowHash(prev, f[0], f[1], f[2], f[3], f[4], []byte(f[5]))
		viaCanon, err2 := chainHash(prev, canonical(f[0], f[1], f[2], f[3], f[4], f[5]))
		switch {
		case !ok && (err == nil || err2 == nil):
			t.Fatalf("prev %q is malformed: rowHash err %v, chainHash err %v", prev, err, err2)
		case ok && (err != nil || err2 != nil):
			t.Fatalf("prev %q: rowHash err %v, chainHash err %v", prev, err, err2)
		case got != want || viaCanon != want:
			t.Fatalf("row %q after %q: rowHash %s, chainHash %s, want %s", f, prev, got, viaCanon, want)
		}
	}
}
