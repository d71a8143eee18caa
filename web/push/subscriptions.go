package push

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	// upsertSubscription: a browser that subscribes again (same endpoint)
	// moves to whoever is logged in now, with its new keys.
	upsertSubscription = `INSERT INTO push_subscriptions (id, web_user, endpoint, p256dh, auth, device, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (endpoint) DO UPDATE SET web_user = $2, p256dh = $4, auth = $5, device = $6, created_at = $7`
	selectSubscriptionID = `SELECT id FROM push_subscriptions WHERE endpoint = $1`
	deleteSubscription   = `DELETE FROM push_subscriptions WHERE id = $1 AND web_user = $2`
	deleteByEndpoint     = `DELETE FROM push_subscriptions WHERE endpoint = $1 AND web_user = $2`
	dropSubscription     = `DELETE FROM push_subscriptions WHERE id = $1`
	dropSent             = `DELETE FROM push_sent WHERE subscription_id = $1`
	selectUserDevices    = `SELECT id, web_user, endpoint, p256dh, auth, device, created_at, last_push_at
	FROM push_subscriptions WHERE web_user = $1 ORDER BY created_at, id`
	selectAllDevices = `SELECT id, web_user, endpoint, p256dh, auth, device, created_at, last_push_at
	FROM push_subscriptions ORDER BY created_at, id`
	touchSubscription = `UPDATE push_subscriptions SET last_push_at = $1 WHERE id = $2`
)

// Limits of what a browser may register.
const (
	maxEndpoint  = 2048
	maxDevice    = 100
	maxPerUser   = 20
	p256dhLength = 65 // an uncompressed P-256 point
	authLength   = 16
)

// ErrInvalid is a subscription the gateway refuses (the message names the
// field); ErrTooMany a user past maxPerUser devices.
var (
	ErrInvalid = errors.New("invalid push subscription")
	ErrTooMany = errors.New("too many devices")
)

// Subscription is one device of a web user: where its push service takes
// pushes for it, and the keys a payload is encrypted to.
type Subscription struct {
	ID         string
	User       string
	Endpoint   string
	P256dh     string // base64url
	Auth       string // base64url
	Device     string // a name for people ("Chrome on Android")
	CreatedAt  time.Time
	LastPushAt *time.Time
}

// Services are the push services of the browsers that support Web Push
// (Chrome's FCM, Firefox's autopush, Safari's, Edge's WNS): a subscription
// names an https endpoint on one of these hosts or their subdomains, so a
// logged-in user cannot make the gateway post to any other address.
var Services = []string{"fcm.googleapis.com", "android.googleapis.com", "updates.push.services.mozilla.com",
	"push.services.mozilla.com", "web.push.apple.com", "notify.windows.com"}

// Store keeps the subscriptions.
type Store struct {
	db  *storage.DB
	now func() time.Time
	// origins are more push services, as "scheme://host[:port]" (tests:
	// the fake's loopback address).
	origins []string
}

// NewStore returns a store over db that accepts endpoints of Services and
// of the extra origins.
func NewStore(db *storage.DB, now func() time.Time, origins ...string) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now, origins: origins}
}

// Validate checks what a browser sent: an https endpoint of a known push
// service, keys of the right sizes, a short device name. It returns the
// cleaned subscription.
func (st *Store) Validate(s Subscription) (Subscription, error) {
	u, err := url.Parse(s.Endpoint)
	switch {
	case s.Endpoint == "" || err != nil || u.Host == "" || u.User != nil || len(s.Endpoint) > maxEndpoint:
		return s, fmt.Errorf("%w: endpoint: not an absolute URL of at most %d bytes", ErrInvalid, maxEndpoint)
	case !st.knownService(u):
		return s, fmt.Errorf("%w: endpoint: not the https address of a known push service", ErrInvalid)
	}
	if b, err := decodeKey(s.P256dh); err != nil || len(b) != p256dhLength || b[0] != 4 {
		return s, fmt.Errorf("%w: keys.p256dh: not an uncompressed P-256 public key (base64url)", ErrInvalid)
	}
	if b, err := decodeKey(s.Auth); err != nil || len(b) != authLength {
		return s, fmt.Errorf("%w: keys.auth: not a 16-byte secret (base64url)", ErrInvalid)
	}
	s.Device = strings.TrimSpace(strings.ToValidUTF8(s.Device, ""))
	if utf8.RuneCountInString(s.Device) > maxDevice {
		s.Device = string([]rune(s.Device)[:maxDevice])
	}
	if s.Device == "" {
		s.Device = "browser"
	}
	return s, nil
}

func (st *Store) knownService(u *url.URL) bool {
	origin := u.Scheme + "://" + u.Host
	for _, o := range st.origins {
		if o == origin {
			return true
		}
	}
	if u.Scheme != "https" || u.Port() != "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, s := range Services {
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Add subscribes a device for user (validated first). A user has at most
// maxPerUser devices.
func (st *Store) Add(ctx context.Context, user string, s Subscription) (Subscription, error) {
	s, err := st.Validate(s)
	if err != nil {
		return s, err
	}
	have, err := st.List(ctx, user)
	if err != nil {
		return s, err
	}
	if len(have) >= maxPerUser {
		found := false
		for _, h := range have {
			found = found || h.Endpoint == s.Endpoint
		}
		if !found {
			return s, fmt.Errorf("%w: at most %d per user; turn one off first", ErrTooMany, maxPerUser)
		}
	}
	s.User, s.ID, s.CreatedAt = user, newID(), st.now()
	if _, err := st.db.ExecContext(ctx, upsertSubscription, s.ID, user, s.Endpoint, s.P256dh, s.Auth, s.Device,
		storage.FormatTime(s.CreatedAt)); err != nil {
		return s, fmt.Errorf("push: add a subscription: %w", err)
	}
	if err := st.db.QueryRowContext(ctx, selectSubscriptionID, s.Endpoint).Scan(&s.ID); err != nil {
		return s, fmt.Errorf("push: add a subscription: %w", err)
	}
	return s, nil
}

// Remove turns a device of user off, by its id or its endpoint; it
// reports whether one was removed. Another user's device is never
// touched.
func (st *Store) Remove(ctx context.Context, user, id, endpoint string) (bool, error) {
	var res sql.Result
	var err error
	if id != "" {
		res, err = st.db.ExecContext(ctx, deleteSubscription, id, user)
	} else {
		res, err = st.db.ExecContext(ctx, deleteByEndpoint, endpoint, user)
	}
	if err != nil {
		return false, fmt.Errorf("push: remove a subscription: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Drop removes a subscription the push service said is gone (404, 410).
func (st *Store) Drop(ctx context.Context, id string) error {
	return st.db.InTx(ctx, func(q storage.Querier) error {
		if _, err := q.ExecContext(ctx, dropSubscription, id); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, dropSent, id)
		return err
	})
}

// List is user's devices, oldest first.
func (st *Store) List(ctx context.Context, user string) ([]Subscription, error) {
	return st.query(ctx, selectUserDevices, user)
}

// All is every user's devices.
func (st *Store) All(ctx context.Context) ([]Subscription, error) {
	return st.query(ctx, selectAllDevices)
}

func (st *Store) query(ctx context.Context, q string, args ...any) ([]Subscription, error) {
	rows, err := st.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("push: list subscriptions: %w", err)
	}
	defer rows.Close()
	var out []Subscription
	for rows.Next() {
		var s Subscription
		var created string
		var last sql.NullString
		if err := rows.Scan(&s.ID, &s.User, &s.Endpoint, &s.P256dh, &s.Auth, &s.Device, &created, &last); err != nil {
			return nil, fmt.Errorf("push: list subscriptions: %w", err)
		}
		s.CreatedAt, _ = storage.ParseTime(created)
		if last.Valid {
			if t, err := storage.ParseTime(last.String); err == nil {
				s.LastPushAt = &t
			}
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (st *Store) touch(ctx context.Context, id string) {
	_, _ = st.db.ExecContext(ctx, touchSubscription, storage.FormatTime(st.now()), id)
}

func newID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
