package pushtest_test

import (
	"net/http"
	"strings"
	"testing"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/metnos/gateway/web/push/pushtest"
)

// TestFake_VerifiesAndDecrypts: the fake takes a push signed with the key
// the device subscribed with and decrypts it; it refuses one signed with
// another key, and one encrypted to another device's keys.
func TestFake_VerifiesAndDecrypts(t *testing.T) {
	f := pushtest.New(t)
	priv, pub, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	otherPriv, otherPub, _ := webpush.GenerateVAPIDKeys()
	d := f.Subscribe(t, pub)
	other := f.Subscribe(t, pub)
	send := func(to *pushtest.Device, keys webpush.Keys, pub, priv string) int {
		t.Helper()
		res, err := webpush.SendNotification([]byte(`{"hello":"phone"}`), &webpush.Subscription{Endpoint: to.Endpoint, Keys: keys},
			&webpush.Options{Subscriber: "admin@localhost", TTL: 60, VAPIDPublicKey: pub, VAPIDPrivateKey: priv})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	keys := webpush.Keys{Auth: d.Auth, P256dh: d.P256dh}
	if code := send(d, keys, pub, priv); code != http.StatusCreated {
		t.Fatalf("a good push: %d (%v)", code, f.Refused())
	}
	if p := f.Next(t, 5e9); string(p.Payload) != `{"hello":"phone"}` || p.Subject != "mailto:admin@localhost" || p.TTL != 60 {
		t.Fatalf("decrypted: %+v", p)
	}
	if code := send(d, keys, otherPub, otherPriv); code != http.StatusUnauthorized {
		t.Fatalf("a push signed with another VAPID key: %d", code)
	}
	if code := send(other, keys, pub, priv); code != http.StatusBadRequest {
		t.Fatalf("a push encrypted to another device: %d", code)
	}
	if r := f.Refused(); len(r) != 2 || !strings.Contains(r[0], "applicationServerKey") || !strings.Contains(r[1], "decrypt") {
		t.Fatalf("refusals: %v", r)
	}
	f.Gone(d)
	if code := send(d, keys, pub, priv); code != http.StatusGone {
		t.Fatalf("a gone device: %d", code)
	}
}
