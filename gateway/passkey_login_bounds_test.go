package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/web/webtest"
)

// TestPasskeyLogin_BeginsBounded: sign-ins with a passkey begin without a
// login, and each stores a challenge; 500 begins from one address store
// passkeys.MaxLoginsPerSource of them (the rest 429 with Retry-After,
// nothing stored), 1,500 begins from as many addresses store
// passkeys.MaxLogins, and once they expire they are deleted and begins
// work again.
func TestPasskeyLogin_BeginsBounded(t *testing.T) {
	clock := testclock.New(time.Now())
	app := webtest.NewAppAt(t, clock.Now, nil)
	srv, _ := webtest.Server(t, app)
	ctx := context.Background()
	c := webtest.BrowserClient(t)
	_, page := webtest.GetPath(t, c, srv.URL+"/login")
	form := url.Values{"csrf": {webtest.CSRF(t, page)}}
	counts := map[int]int{}
	for range 500 {
		resp, err := c.PostForm(srv.URL+"/login/passkey/begin", form)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(string(body), "Too many passkey sign-ins")) {
			t.Fatalf("a begin past the bound: %v %s", resp.Header, body)
		}
	}
	if counts[http.StatusOK] != passkeys.MaxLoginsPerSource || counts[http.StatusTooManyRequests] != 500-passkeys.MaxLoginsPerSource {
		t.Fatalf("500 begins from one address answered %v", counts)
	}
	rows := func() int {
		var n int
		if err := app.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM passkey_ceremonies`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != passkeys.MaxLoginsPerSource {
		t.Fatalf("%d challenges stored", n)
	}

	store := passkeys.New(app.DB, clock.Now)
	rp := passkeys.RP{ID: "localhost", Origin: srv.URL}
	refused := 0
	for i := range 1500 {
		_, err := store.BeginLogin(ctx, rp, fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		switch {
		case errors.Is(err, passkeys.ErrTooManyLogins):
			refused++
		case err != nil:
			t.Fatal(err)
		}
	}
	if n := rows(); n != passkeys.MaxLogins || refused != 1500-(passkeys.MaxLogins-passkeys.MaxLoginsPerSource) {
		t.Fatalf("%d challenges stored, %d begins refused", n, refused)
	}
	clock.Add(passkeys.CeremonyTTL + time.Second)
	if _, err := store.BeginLogin(ctx, rp, "10.9.9.9"); err != nil || rows() != 1 {
		t.Fatalf("a begin after the others expired: %v, %d stored", err, rows())
	}
}
