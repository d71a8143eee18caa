package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/mcpproxy"
	"github.com/metnos/gateway/mcpserver"
)

// mcpMap is a [[mcp.servers]] entry as the proxy reads it.
func mcpMap(srv config.MCPServer) mcpproxy.Map {
	m := mcpproxy.Map{Name: srv.Name, UnknownTool: srv.UnknownTool, WaitS: time.Duration(srv.Wait).Seconds(),
		Tools: make(map[string]mcpproxy.Tool, len(srv.Tools))}
	for name, t := range srv.Tools {
		m.Tools[name] = mcpproxy.Tool{Capability: t.Capability, Target: t.Target}
	}
	return m
}

// mcpServerMap is GET /v1/mcp/servers/{name}: the tool map of a
// [[mcp.servers]] entry, for `gateway mcp-proxy --name NAME` on an
// agent's machine (which needs only GATEWAY_URL and GATEWAY_TOKEN, as the
// hooks do). How the gateway reaches the server (command, url, its token)
// is not part of it.
func (s *Server) mcpServerMap(w http.ResponseWriter, r *http.Request) {
	srv := s.cfg.MCP.MCPServerNamed(r.PathValue("name"))
	if srv == nil {
		writeError(w, http.StatusNotFound, "unknown_mcp_server", "no [[mcp.servers]] entry named "+quoteName(r.PathValue("name")))
		return
	}
	writeJSON(w, http.StatusOK, mcpMap(*srv))
}

func quoteName(n string) string {
	if len(n) > 64 {
		n = n[:64] + "…"
	}
	return `"` + cleanMsg(errors.New(n)) + `"`
}

// mcpProxyHandler serves /mcp/{name}: the MCP proxy (package mcpproxy) in
// front of each [[mcp.servers]] entry that has a command (the gateway
// starts it, with only the environment the entry passes) or a url, over
// streamable HTTP for agents with a token. Every tool call asks as the
// agent whose token it carries, through the agent API in process, like
// /mcp. ?include_blocked=true lists the tools policy denies too.
func (s *Server) mcpProxyHandler(api http.Handler) http.Handler {
	type served struct{ all, usable http.Handler }
	byName := map[string]served{}
	for _, srv := range s.cfg.MCP.Servers {
		if len(srv.Command) == 0 && srv.URL == "" {
			continue // proxied on agents' machines only
		}
		up := mcpproxy.Server{Command: srv.Command, URL: srv.URL, Token: srv.Token, Version: "gateway"}
		home := ""
		if len(srv.Command) > 0 {
			up.Env = srv.MCPCommandEnv(os.Getenv)
			up.Stderr = &stderrLog{log: s.log, server: srv.Name}
			home = os.Getenv("HOME") // the HOME the command gets
		}
		shared := mcpproxy.NewShared(up.Connect)
		s.mcpUpstreams = append(s.mcpUpstreams, shared)
		opts := mcpproxy.Options{Map: mcpMap(srv), Upstream: shared.Session, Home: home,
			Backend: func(ctx context.Context, req mcp.Request) (mcpproxy.Backend, error) {
				c, err := inProcessClient(api, req)
				if err != nil {
					return nil, err
				}
				return mcpBackend{c, s}, nil
			}}
		usable := mcpproxy.New(opts)
		opts.IncludeBlocked = true
		all := mcpproxy.New(opts)
		s.mcpProxies = append(s.mcpProxies, usable, all)
		for _, p := range []*mcp.Server{usable, all} {
			p.AddReceivingMiddleware(s.countMCPCalls, s.traceMCPCalls)
		}
		byName[srv.Name] = served{
			all:    s.endOnRevoke(mcpserver.HTTPHandler(all, s.mcpVerify, s.log)),
			usable: s.endOnRevoke(mcpserver.HTTPHandler(usable, s.mcpVerify, s.log)),
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := byName[r.PathValue("name")]
		if !ok {
			writeError(w, http.StatusNotFound, "unknown_mcp_server", "no [[mcp.servers]] entry named "+quoteName(r.PathValue("name"))+" with a command or url")
			return
		}
		switch v := r.URL.Query().Get("include_blocked"); v {
		case "", "false", "0":
			h.usable.ServeHTTP(w, r)
		case "true", "1":
			h.all.ServeHTTP(w, r)
		default:
			writeError(w, http.StatusBadRequest, "invalid_include_blocked", "include_blocked: want true or false, got "+quoteName(v))
		}
	})
}

// closeMCPProxies ends the proxies' sessions and stops the servers the
// gateway started.
func (s *Server) closeMCPProxies() {
	for _, p := range s.mcpProxies {
		mcpserver.Close(p)
	}
	for _, u := range s.mcpUpstreams {
		u.Close()
	}
}

// stderrLog logs each line a server writes on stderr, at debug; no
// goroutine of its own (exec copies into it while the command runs).
type stderrLog struct {
	log    *slog.Logger
	server string
	mu     sync.Mutex
	buf    []byte
}

// maxStderrLine bounds a line kept while waiting for its end.
const maxStderrLine = 4096

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxStderrLine {
			return len(p), nil
		}
		if i < 0 {
			i = len(l.buf)
		}
		l.log.Debug("mcp server stderr", "mcp_server", l.server, "line", string(l.buf[:i]))
		l.buf = l.buf[min(i+1, len(l.buf)):]
	}
}
