// Package pushtest is a fake Web Push service for tests: the real
// webpush-go client posts to it over HTTP as it would to FCM, Mozilla's
// autopush or Apple's service.
//
// Like a real push service it refuses a push whose VAPID JWT (RFC 8292)
// does not verify against the key in the Authorization header, names
// another audience, has expired or lasts over 24 hours, or whose key is
// not the applicationServerKey the device subscribed with. Unlike one, it
// also decrypts each aes128gcm payload (RFC 8291) with the device's
// private key, which only the test (the "browser") holds, so a test reads
// exactly what a phone would show. Faults on demand: the next pushes
// answer 429 with Retry-After, or 5xx; a device can be made gone (410).
package pushtest

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Push is one push the fake accepted, decrypted.
type Push struct {
	Device  string // the Device's ID
	Payload []byte
	TTL     int
	Topic   string
	Urgency string
	// Subject is the VAPID JWT's "sub" claim.
	Subject string
}

// Device is a browser's subscription at the fake: its endpoint and
// public keys as PushSubscription.toJSON() gives them, and the private
// key only the browser holds.
type Device struct {
	ID       string
	Endpoint string
	P256dh   string // base64url
	Auth     string // base64url
	priv     *ecdh.PrivateKey
	auth     []byte
	appKey   string // the applicationServerKey it subscribed with
}

type fault struct {
	status     int
	retryAfter string
}

// Server is the fake push service.
type Server struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	devices map[string]*Device
	gone    map[string]bool
	faults  []fault
	counts  map[string]int
	refused []string // why each refused push was refused
	pushes  chan Push
	now     func() time.Time
}

// New starts a fake on a loopback address; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{devices: map[string]*Device{}, gone: map[string]bool{}, counts: map[string]int{},
		pushes: make(chan Push, 1000), now: time.Now}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Subscribe makes a device that subscribed with applicationServerKey
// (the gateway's VAPID public key, base64url), as pushManager.subscribe
// would: a fresh P-256 key pair and a 16-byte auth secret.
func (s *Server) Subscribe(t testing.TB, applicationServerKey string) *Device {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	idb := make([]byte, 9)
	_, _ = rand.Read(idb)
	id := base64.RawURLEncoding.EncodeToString(idb)
	d := &Device{ID: id, Endpoint: s.URL + "/push/" + id, priv: priv, auth: auth, appKey: applicationServerKey,
		P256dh: base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(auth)}
	s.mu.Lock()
	s.devices[id] = d
	s.mu.Unlock()
	return d
}

// Fail makes the next n pushes answer status (429, 500, 503…), with
// Retry-After when retryAfter is not empty.
func (s *Server) Fail(n, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{status, retryAfter})
	}
}

// Gone makes every later push to d answer 410 Gone, as after the user
// revoked the permission.
func (s *Server) Gone(d *Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[d.ID] = true
}

// Count is how many pushes d accepted.
func (s *Server) Count(d *Device) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[d.ID]
}

// Refused lists why pushes were refused for a bad VAPID JWT or payload:
// a test of the gateway expects none.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// Next is the next accepted push, or a test failure after timeout.
func (s *Server) Next(t testing.TB, timeout time.Duration) Push {
	t.Helper()
	select {
	case p := <-s.pushes:
		return p
	case <-time.After(timeout):
		t.Fatalf("pushtest: no push within %s (refused: %v)", timeout, s.Refused())
		return Push{}
	}
}

// None checks that no push is accepted within d (a bound, not a
// synchronisation: the caller has already waited for what must happen).
func (s *Server) None(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case p := <-s.pushes:
		t.Fatalf("pushtest: unexpected push to %s: %s", p.Device, p.Payload)
	case <-time.After(d):
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/push/")
	if r.Method != http.MethodPost || !ok {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	d := s.devices[id]
	gone := s.gone[id]
	var f *fault
	if len(s.faults) > 0 {
		f = &s.faults[0]
		s.faults = s.faults[1:]
	}
	s.mu.Unlock()
	switch {
	case d == nil:
		http.NotFound(w, r)
		return
	case gone:
		http.Error(w, "push subscription has unsubscribed or expired", http.StatusGone)
		return
	case f != nil:
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, http.StatusText(f.status), f.status)
		return
	}
	p, status, why := s.accept(r, d, body)
	if why != "" {
		s.mu.Lock()
		s.refused = append(s.refused, why)
		s.mu.Unlock()
		http.Error(w, why, status)
		return
	}
	s.mu.Lock()
	s.counts[id]++
	s.mu.Unlock()
	s.pushes <- p
	w.Header().Set("Location", s.URL+"/message/"+strconv.Itoa(int(time.Now().UnixNano())))
	w.WriteHeader(http.StatusCreated)
}

// accept checks a push as a push service would and decrypts it.
func (s *Server) accept(r *http.Request, d *Device, body []byte) (Push, int, string) {
	if r.Header.Get("Content-Encoding") != "aes128gcm" {
		return Push{}, http.StatusUnsupportedMediaType, "Content-Encoding is not aes128gcm"
	}
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return Push{}, http.StatusBadRequest, "TTL header missing or not a number"
	}
	sub, why := s.verifyVAPID(r.Header.Get("Authorization"), d.appKey)
	if why != "" {
		return Push{}, http.StatusUnauthorized, why
	}
	if len(body) > 4096 {
		return Push{}, http.StatusRequestEntityTooLarge, fmt.Sprintf("payload of %d bytes over 4096", len(body))
	}
	plain, err := decrypt(d, body)
	if err != nil {
		return Push{}, http.StatusBadRequest, "payload: " + err.Error()
	}
	return Push{Device: d.ID, Payload: plain, TTL: ttl, Topic: r.Header.Get("Topic"), Urgency: r.Header.Get("Urgency"),
		Subject: sub}, 0, ""
}

// Heal drops the faults not yet served.
func (s *Server) Heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}
