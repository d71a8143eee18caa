// The child's way to the gateway: its API and nothing else.

package sandbox

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// apiPath reports the gateway's paths an agent calls: the API, MCP and the
// health checks. The web page (where a person approves) is not among them.
func apiPath(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == "/mcp" || strings.HasPrefix(p, "/mcp/") || p == "/healthz" || p == "/readyz"
}

// APIBridge forwards the child's calls to the gateway at base, for the
// API's paths only; every other path is answered 404 here, so the web
// page is not reachable from inside the sandbox. Cookies are dropped: the
// API takes a bearer token, and a web session is not the agent's.
func APIBridge(base *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			pr.Out.Header.Del("Cookie")
		},
		FlushInterval: -1, // the event stream and long polls
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.Contains(p, "..") || !apiPath(p) || r.URL.RawPath != "" {
			http.Error(w, "gateway run: only the gateway's API is reachable from inside the sandbox", http.StatusNotFound)
			return
		}
		rp.ServeHTTP(w, r)
	})
}
