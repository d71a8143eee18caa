package callbackurl

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ci := []string{"https://ci.example.com/hooks/*"}
	local := []string{"http://127.0.0.1:*/hooks/*"}
	for _, tc := range []struct {
		name     string
		patterns []string
		url      string
		want     string // the URL sent, or "" when refused
	}{
		{"matches", ci, "https://ci.example.com/hooks/a1", "https://ci.example.com/hooks/a1"},
		{"host case and default port", ci, "https://CI.example.com:443/hooks/a1#frag", "https://ci.example.com/hooks/a1"},
		{"query kept", ci, "https://ci.example.com/hooks/a1?x=1", "https://ci.example.com/hooks/a1?x=1"},
		{"star stops at slash", ci, "https://ci.example.com/hooks/a/b", ""},
		{"other host", ci, "https://evil.example.com/hooks/a1", ""},
		{"host as prefix", ci, "https://ci.example.com.evil.net/hooks/a1", ""},
		{"userinfo", ci, "https://ci.example.com@evil.net/hooks/a1", ""},
		{"userinfo same host", ci, "https://u:p@ci.example.com/hooks/a1", ""},
		{"http for https", ci, "http://ci.example.com/hooks/a1", ""},
		{"other port", ci, "https://ci.example.com:8443/hooks/a1", ""},
		{"no patterns", nil, "https://ci.example.com/hooks/a1", ""},
		{"ftp", ci, "ftp://ci.example.com/hooks/a1", ""},
		{"loopback named", local, "http://127.0.0.1:9000/hooks/x", "http://127.0.0.1:9000/hooks/x"},
		{"loopback other address", local, "http://127.0.0.2:9000/hooks/x", ""},
		{"star host does not name loopback", []string{"http://*:*/hooks/*"}, "http://127.0.0.1:9000/hooks/x", ""},
		{"star host does not name localhost", []string{"http://*:*/hooks/*"}, "http://localhost:9000/hooks/x", ""},
		{"star host does not name metadata", []string{"http://*/*"}, "http://169.254.169.254/latest", ""},
		{"star host does not name private", []string{"http://*/*"}, "http://10.1.2.3/x", ""},
		{"star host does not name mapped loopback", []string{"http://*/*"}, "http://[::ffff:127.0.0.1]/x", ""},
		{"star host public", []string{"http://*/*"}, "http://93.184.216.34/x", "http://93.184.216.34/x"},
		{"localhost named", []string{"http://localhost:*/*"}, "http://localhost:8080/x", "http://localhost:8080/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Check(tc.patterns, tc.url)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("Check(%q) allowed %q by %q, want refused", tc.url, a.URL, a.Pattern)
			case tc.want != "" && err != nil:
				t.Fatalf("Check(%q): %v, want allowed", tc.url, err)
			case tc.want != "" && a.URL != tc.want:
				t.Fatalf("Check(%q) = %q, want %q", tc.url, a.URL, tc.want)
			}
		})
	}
}

func TestCheckPattern(t *testing.T) {
	for _, bad := range []string{"ci.example.com/*", "ftp://x/", "https://u@x/", "https:///x", "https://x/#f"} {
		if CheckPattern(bad) == nil {
			t.Errorf("CheckPattern(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"https://ci.example.com/hooks/*", "http://127.0.0.1:*/hooks/*", "http://[::1]:8080/x"} {
		if err := CheckPattern(good); err != nil {
			t.Errorf("CheckPattern(%q): %v", good, err)
		}
	}
}

// TestDial_ResolvedAddressChecked: a public-looking name that resolves to
// loopback is refused at dial time, and nothing reaches the server.
func TestDial_ResolvedAddressChecked(t *testing.T) {
	hit := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	toLoopback := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	a, err := Check([]string{"http://hooks.example.com:*/*"}, "http://hooks.example.com:"+port+"/x")
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: a.DialContext(toLoopback)}}
	_, err = c.Post(a.URL, "application/json", strings.NewReader("{}"))
	if err == nil || !strings.Contains(err.Error(), "does not name") {
		t.Fatalf("POST through a name resolving to 127.0.0.1: %v, want refused", err)
	}
	select {
	case <-hit:
		t.Fatal("the server was reached")
	default:
	}
	// The pattern that names the address reaches it.
	a, err = Check([]string{"http://127.0.0.1:*/*"}, srv.URL+"/x")
	if err != nil {
		t.Fatal(err)
	}
	c = &http.Client{Transport: &http.Transport{DialContext: a.DialContext(toLoopback)}}
	resp, err := c.Post(a.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-hit
}
