package gatewaytest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// Fuzz is a whole gateway for a fuzz target, called through its handler
// in process (no listener: the fuzzer wants execs, not sockets). Every
// `every` inputs it starts over on a fresh database, so that a long run
// stays fast; Next says when.
type Fuzz struct {
	App     *gateway.App
	Handler http.Handler
	// Closing, when set, runs before a generation's App is closed (an
	// adapter whose Run never ran waits for its jobs there).
	Closing func(app *gateway.App)

	dir   string
	every int
	runs  int
	gen   int
	build func(tb testing.TB, cfg config.Config) (config.Config, gateway.AppOptions)
	tb    *genTB
}

// NewFuzz builds the first generation: build makes its config and options
// from config.Default over a database of its own, with no decision log
// (the fuzzer would fill the disk), and opts.Home the fuzz's directory
// unless build sets it. tb is for the fakes build starts: their cleanups
// run when the generation ends. The last generation is closed when f ends.
func NewFuzz(f *testing.F, every int, build func(tb testing.TB, cfg config.Config) (config.Config, gateway.AppOptions)) *Fuzz {
	f.Helper()
	z := &Fuzz{dir: f.TempDir(), every: every, build: build}
	f.Cleanup(func() { z.close(f) })
	z.open(f)
	return z
}

// Next readies the gateway for one more input of t: a fresh generation
// (reported true) once the last has taken `every` inputs.
func (z *Fuzz) Next(t *testing.T) (fresh bool) {
	t.Helper()
	if z.runs++; z.runs <= z.every {
		return false
	}
	z.close(t)
	z.open(t)
	z.runs = 1
	return true
}

// Client is the project's client for the agent token, calling the
// gateway's handler in process.
func (z *Fuzz) Client(token string) *client.Client {
	c := client.New("http://gateway.fuzz", token)
	c.HTTPClient = &http.Client{Transport: inProcess{z}}
	return c
}

func (z *Fuzz) open(tb testing.TB) {
	tb.Helper()
	z.gen++
	z.tb = &genTB{TB: tb}
	cfg := config.Default()
	cfg.Storage.Path = filepath.Join(z.dir, "gateway-"+strconv.Itoa(z.gen)+".db")
	cfg.Vaglio.LogDir = ""
	cfg, opts := z.build(z.tb, cfg)
	if opts.Home == "" {
		opts.Home = z.dir
	}
	app, err := gateway.NewApp(context.Background(), cfg, opts)
	if err != nil {
		tb.Fatalf("gatewaytest: NewApp: %v", err)
	}
	z.App, z.Handler, z.runs = app, app.Server.Handler(), 0
}

// close ends the generation: its App, its fakes, its database's files.
func (z *Fuzz) close(tb testing.TB) {
	if z.App == nil {
		return
	}
	if z.Closing != nil {
		z.Closing(z.App)
	}
	path := z.App.Config.Storage.Path
	if err := z.App.Close(); err != nil {
		tb.Errorf("gatewaytest: close: %v", err)
	}
	z.App, z.Handler = nil, nil
	for i := len(z.tb.cleanups) - 1; i >= 0; i-- {
		z.tb.cleanups[i]()
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

// genTB is the testing.TB of one generation's fakes: made inside the fuzz
// function, where F's own methods may not be called, its cleanups run
// when the generation ends.
type genTB struct {
	testing.TB
	cleanups []func()
}

func (t *genTB) Helper()          {}
func (t *genTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// inProcess serves a client's request with the gateway's handler.
type inProcess struct{ z *Fuzz }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.RequestURI, r.RemoteAddr = r.URL.RequestURI(), "127.0.0.1:1"
	rec := httptest.NewRecorder()
	p.z.Handler.ServeHTTP(rec, r)
	return rec.Result(), nil
}
