package web_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/web/webtest"
)

// lockedBuffer is a log sink the server's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestWeb_DebugLogHasNoLoginToken: at debug level the request log names
// every request's path, but never a login link's token, used or refused.
func TestWeb_DebugLogHasNoLoginToken(t *testing.T) {
	var logs lockedBuffer
	g := gatewaytest.Start(t, gatewaytest.Config(t), gateway.AppOptions{Home: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	app := g.App
	base := strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1)
	link := webtest.LoginLink(t, app, base, "owner")
	token := link[strings.LastIndexByte(link, '/')+1:]
	c := webtest.BrowserClient(t)
	for range 2 { // used, then refused
		resp, err := c.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if resp, err := http.Get(base + "/login/" + strings.Repeat("x", 43)); err == nil {
		resp.Body.Close()
	}
	out := logs.String()
	if !strings.Contains(out, "path=/login/(token)") {
		t.Fatalf("the debug log has no line for the login link:\n%s", out)
	}
	if strings.Contains(out, token) || strings.Contains(out, strings.Repeat("x", 43)) {
		t.Fatalf("the debug log holds a login token:\n%s", out)
	}
}
