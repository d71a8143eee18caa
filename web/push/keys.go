// Package push delivers Web Push notifications (RFC 8030, with VAPID,
// RFC 8292, and aes128gcm payloads, RFC 8291) to the devices of the web
// page's users, through github.com/SherClockHolmes/webpush-go: the card of
// a pending request, the update when it is decided or expires, and the
// one-time decision tokens of a notification's Allow once and Deny.
//
// Everything lives in the gateway database (push_vapid,
// push_subscriptions, push_sent, push_actions), so every replica pushes
// with the same VAPID key and a delivery survives a restart.
package push

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	// insertVAPID keeps the first key pair any replica wrote: two
	// replicas starting at once both read the same one back.
	insertVAPID = `INSERT INTO push_vapid (id, public_key, private_key, created_at) VALUES (1, $1, $2, $3)
	ON CONFLICT (id) DO NOTHING`
	selectVAPID = `SELECT public_key, private_key FROM push_vapid WHERE id = 1`
)

// Keys is the gateway's VAPID key pair (base64url, unpadded): the public
// key is the applicationServerKey every browser subscribes with; the
// private key signs each push's JWT and never leaves the database and
// this process (no log line, no page, no config show).
type Keys struct {
	Public  string
	private string
}

// String never shows the private key.
func (k Keys) String() string { return "vapid:" + k.Public }

// LoadKeys returns the gateway's VAPID key pair, generating and storing it
// on first start.
func LoadKeys(ctx context.Context, db *storage.DB, now time.Time) (Keys, error) {
	k, err := readKeys(ctx, db)
	if err == nil {
		return k, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Keys{}, fmt.Errorf("push: read the VAPID keys: %w", err)
	}
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return Keys{}, fmt.Errorf("push: generate the VAPID keys: %w", err)
	}
	if _, err := db.ExecContext(ctx, insertVAPID, pub, priv, storage.FormatTime(now)); err != nil {
		return Keys{}, fmt.Errorf("push: store the VAPID keys: %w", err)
	}
	k, err = readKeys(ctx, db)
	if err != nil {
		return Keys{}, fmt.Errorf("push: read the VAPID keys: %w", err)
	}
	return k, nil
}

func readKeys(ctx context.Context, db *storage.DB) (Keys, error) {
	var k Keys
	err := db.QueryRowContext(ctx, selectVAPID).Scan(&k.Public, &k.private)
	return k, err
}
