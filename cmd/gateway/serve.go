package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/web"
)

// newLogger builds the process logger: text on a terminal, JSON otherwise,
// unless --log-format or [log] format says which.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if level != "" {
		if err := lv.UnmarshalText([]byte(level)); err != nil {
			return nil, usagef("--log-level: %v", err)
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	out, sink := bufferLog(w)
	wrap := func(h slog.Handler) *slog.Logger {
		if sink == nil {
			return slog.New(h)
		}
		return slog.New(flushingHandler{h, sink})
	}
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	switch format {
	case "text":
		return wrap(slog.NewTextHandler(out, opts)), nil
	case "json":
		return wrap(slog.NewJSONHandler(out, opts)), nil
	}
	return nil, usagef("--log-format: %q is neither text nor json", format)
}

// localAgentID is the agent created when the config names none; the
// local admin agent is localAdminID, the CLI's and the owner's, never an
// agent's.
const (
	localAgentID = "local"
	localAdminID = "local-admin"
)

// localAgents are what ensureLocalAgents made: where each token is kept,
// and whether it was created now (then the agent's is printed, once).
type localAgents struct {
	agentPath, adminPath string
	created              bool
}

// ensureLocalAgents gives a config without agents two, each with a token
// generated once and kept 0600 beside the database: "local", an agent
// that is not admin (the one hooks and agents use), and "local-admin",
// the admin credential of the CLI's admin commands (policy simulate,
// suggestions). The second file is among the gateway's own paths, which
// the guard and `gateway run` keep from agents.
func ensureLocalAgents(cfg *config.Config) (localAgents, error) {
	if len(cfg.Agents) > 0 {
		return localAgents{}, nil
	}
	dir := filepath.Dir(cfg.Storage.Path)
	out := localAgents{agentPath: filepath.Join(dir, config.TokenFileName), adminPath: filepath.Join(dir, config.AdminTokenFileName)}
	agentTok, created, err := tokenFile(out.agentPath)
	if err != nil {
		return localAgents{}, err
	}
	adminTok, _, err := tokenFile(out.adminPath)
	if err != nil {
		return localAgents{}, err
	}
	if agentTok == adminTok {
		return localAgents{}, fmt.Errorf("%s and %s hold the same token; delete one to generate a new one", out.agentPath, out.adminPath)
	}
	out.created = created
	a := config.NewAgent(localAgentID)
	a.Token = agentTok
	admin := config.NewAgent(localAdminID)
	admin.Token, admin.Admin = adminTok, true
	cfg.Agents = []config.Agent{a, admin}
	return out, nil
}

// tokenFile reads the token kept in path, generating and saving one (0600,
// its directory 0700) when there is none; created says it was made now.
func tokenFile(path string) (tok string, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", false, err
		}
		var r [24]byte
		if _, err := rand.Read(r[:]); err != nil {
			return "", false, err
		}
		b = []byte("gw_" + hex.EncodeToString(r[:]))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", false, fmt.Errorf("save token: %w", err)
		}
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", false, fmt.Errorf("save token: %w", err)
		}
		created = true
	} else if err != nil {
		return "", false, fmt.Errorf("read token: %w", err)
	}
	tok = strings.TrimSpace(string(b))
	if tok == "" {
		return "", false, fmt.Errorf("token file %s is empty; delete it to generate a new one", path)
	}
	return tok, created, nil
}

func cmdServe(e *env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	listen := fs.String("listen", "", "address to listen on (default server.listen)")
	logFormat := fs.String("log-format", "", "text or json (default: text on a terminal)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	if err := parseNoArgs(fs, "serve", args); err != nil {
		return err
	}
	cfg, err := loadConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	if *listen != "" {
		cfg.Server.Listen = *listen
	}
	if *logFormat == "" {
		*logFormat = cfg.Log.Format
	}
	if *logLevel == "" {
		*logLevel = cfg.Log.Level
	}
	log, err := newLogger(e.stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	defer flushLog(log)
	tuneGC(e.getenv)
	local, err := ensureLocalAgents(&cfg)
	if err != nil {
		return err
	}
	tel, err := startTelemetry(e, cfg, log)
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, log)
	app, err := gateway.NewApp(e.ctx, cfg, gateway.AppOptions{
		Logger: log, Home: e.getenv("HOME"), Messengers: messengers(cfg, log), HostResolver: net.DefaultResolver,
		Telemetry: tel,
	})
	if err != nil {
		return err
	}
	defer app.Close()
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return exitError{exitFail, fmt.Sprintf("listen on %s: %v", cfg.Server.Listen, err)}
	}
	forget, err := recordListen(cfg, ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	defer forget()
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(e.stdout, "gateway %s listening on %s (database %s)\n", buildVersion(), url, app.DB.Name())
	switch {
	case local.created:
		tok := cfg.Agents[0].Token
		fmt.Fprintf(e.stdout, "\nGenerated the local agent token, not an admin (shown once; saved 0600 in %s):\n\n  export GATEWAY_URL=%s GATEWAY_TOKEN=%s\n\n", local.agentPath, url, tok)
		fmt.Fprintf(e.stdout, "The CLI's admin credential (policy simulate, suggestions; never an agent's) is in %s.\n\n", local.adminPath)
	case local.agentPath != "":
		fmt.Fprintf(e.stdout, "Local agent token: in %s  (export GATEWAY_URL=%s GATEWAY_TOKEN=$(cat %s)); the CLI's admin credential: in %s\n",
			local.agentPath, url, local.agentPath, local.adminPath)
	}
	lc := cfg
	lc.Server.Listen = ln.Addr().String()
	base := gateway.LinkBase(lc)
	fmt.Fprintf(e.stdout, "Web page: %s/\n", base)
	// Until someone has logged in, the way in: a one-time link (every
	// session starts from one; `gateway login` prints another at any time).
	if any, err := app.AnyWebLogin(e.ctx); err != nil {
		return err
	} else if !any {
		user := web.DefaultWebUser(cfg)
		link, _, err := app.LoginLink(e.ctx, base, user)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Log in to the web page as %s (one use, 15 minutes; `gateway login` prints another):\n%s\n", user, link)
	} else {
		fmt.Fprintln(e.stdout, "Log in to the web page with a link from `gateway login`.")
	}
	log.Info("serving", "listen", ln.Addr().String(), "agents", len(cfg.Agents), "messengers", app.Service.Notifiers())
	defer releaseExecutableLater(log)()
	defer returnMemoryWhenIdle(log)()
	if err := app.Serve(e.ctx, ln); err != nil {
		return err
	}
	log.Info("stopped")
	flushLog(log)
	return nil
}

// flushLog writes out what a logger from newLogger still buffers.
func flushLog(log *slog.Logger) {
	if h, ok := log.Handler().(flushingHandler); ok {
		h.sink.Flush()
	}
}

func cmdPrune(e *env, args []string) error {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	dry := fs.Bool("dry-run", false, "show what would be pruned, change nothing")
	if err := parseNoArgs(fs, "prune", args); err != nil {
		return err
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	app, err := gateway.NewApp(e.ctx, cfg, gateway.AppOptions{Home: e.getenv("HOME")})
	if err != nil {
		return err
	}
	defer app.Close()
	rep, err := app.Service.Prune(e.ctx, *dry)
	if err != nil {
		return err
	}
	return printJSONLine(e.stdout, rep)
}

// serveGCPercent is the garbage collector's target for `gateway serve`
// unless GOGC is set. A decision allocates only short-lived garbage over a
// small live heap (tens of MiB), so letting the heap grow to five times
// the live data instead of twice cuts collection work by about a sixth of
// a decision's CPU (BenchmarkCheck64: 71 → 60 µs per request) for about
// 20 MiB more with 10,000 requests pending (BenchmarkRSS: 77 → 98 MiB).
const serveGCPercent = 400

// tuneGC applies serveGCPercent unless the operator set GOGC, and a soft
// memory limit that follows the live heap (followMemoryLimit) unless they
// set GOMEMLIMIT.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		followMemoryLimit()
	}
}
