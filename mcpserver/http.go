package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionIdleTimeout closes an HTTP session nobody used for this long. A
// tool call in progress (a request_approval waiting for a person) keeps
// its session alive: only the time between calls counts.
const SessionIdleTimeout = 10 * time.Minute

// MaxSessionsPerAgent bounds the MCP sessions one agent (its own token
// and its child tokens together) holds open at once: each costs the
// gateway memory until it idles out. Beyond it, initialize answers 429
// too_many_sessions.
const MaxSessionsPerAgent = 32

// MaxBodyBytes bounds one HTTP message to /mcp; a tool call is small.
const MaxBodyBytes = 1 << 20

// Verifier checks an agent's bearer token and names the agent ("" = bad
// token).
type Verifier func(token string) (agent string)

// HTTPHandler serves s over MCP's streamable HTTP transport, for callers
// with a token verify accepts (others get 401). A session belongs to the
// agent that opened it: the same session id with another agent's token is
// refused (403). Tool handlers find the caller's token with Token.
func HTTPHandler(s *mcp.Server, verify Verifier, log *slog.Logger) http.Handler {
	return httpHandler(func(*http.Request) *mcp.Server { return s }, verify, log, MaxSessionsPerAgent, time.Now)
}

// HTTPHandlerFor is HTTPHandler for a server chosen by the request that
// opens each session.
func HTTPHandlerFor(server func(*http.Request) *mcp.Server, verify Verifier, log *slog.Logger) http.Handler {
	return httpHandler(server, verify, log, MaxSessionsPerAgent, time.Now)
}

func httpHandler(server func(*http.Request) *mcp.Server, verify Verifier, log *slog.Logger, maxSessions int, now func() time.Time) http.Handler {
	h := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Logger:                       log,
		SessionTimeout:               SessionIdleTimeout,
		MaxRequestBodyBytes:          MaxBodyBytes,
		PropagateRequestCancellation: true,
		// The SDK refuses loopback connections whose Host is not a
		// loopback name, against DNS rebinding; that would also refuse a
		// reverse proxy on the same machine. Every call needs an agent's
		// bearer token, which a rebound browser page does not have.
		DisableLocalhostProtection: true,
	})
	check := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		agent := verify(token)
		if agent == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: agent, Extra: map[string]any{tokenKey: token}}, nil
	}
	capped := newSessionCap(maxSessions, SessionIdleTimeout, now).wrap(h)
	return auth.RequireBearerToken(check, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(capped)
}

const tokenKey = "gateway_token"

// Token is the bearer token an HTTP tool call was authenticated with, ""
// over stdio.
func Token(req mcp.Request) string {
	if req == nil {
		return ""
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	tok, _ := extra.TokenInfo.Extra[tokenKey].(string)
	return tok
}

// Close ends every session of s (their open streams), for a shutdown.
func Close(s *mcp.Server) {
	for ss := range s.Sessions() {
		ss.Close()
	}
}
