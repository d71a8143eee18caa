package discord

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// discordgo builds every REST address from its package-level
// discordgo.EndpointAPI ("https://discord.com/api/v9/"). Changing those
// variables would change them for every session in the process, so the
// adapter leaves them alone and gives its session an HTTP client whose
// transport moves each request onto discord.api_url instead:
// EndpointAPI + "channels/…" is sent to api_url + "/channels/…". The
// version is api_url's (v10 by default); what the adapter uses of the
// API is the same in v9 and v10.
//
// GET /gateway becomes GET /gateway/bot: discordgo's Open asks the
// former for the websocket's address, a bot should ask the latter, which
// the real API and the fake both answer with the address (and the bot's
// session start limits).
type restTransport struct {
	base  *url.URL // api_url, without a trailing "/"
	inner http.RoundTripper
}

// newREST is the HTTP client for a session speaking to apiURL.
func newREST(apiURL string, c *http.Client) (*http.Client, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("discord.api_url: %q is not an http(s) URL", apiURL)
	}
	inner := c.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	out := *c
	out.Transport = &restTransport{base: u, inner: inner}
	return &out, nil
}

// RoundTrip rewrites the address of a request discordgo made. A request
// for anything but the REST API is refused: the bot token would go with it.
func (t *restTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rest, ok := strings.CutPrefix(r.URL.String(), discordgo.EndpointAPI)
	if !ok {
		return nil, fmt.Errorf("discord: refusing a request outside the REST API (%s %s)", r.Method, r.URL.Redacted())
	}
	if p, _, _ := strings.Cut(rest, "?"); p == "gateway" {
		rest = "gateway/bot" + strings.TrimPrefix(rest, "gateway")
	}
	u, err := url.Parse(t.base.String() + "/" + rest)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL, r.Host = u, u.Host
	return t.inner.RoundTrip(r)
}
