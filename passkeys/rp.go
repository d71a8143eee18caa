package passkeys

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// RP is the relying party a ceremony runs for: the page's host (ID) and
// its origin ("https://gw.example.com", "http://localhost:8080").
type RP struct {
	ID     string
	Origin string
}

// RPOf is the relying party of the page: web.public_url's when set, else
// localhost at the port the browser used (host, from its Host header),
// which must then be localhost: passkeys work there, and 127.0.0.1 pages
// redirect to it.
func RPOf(publicURL, host string) (RP, error) {
	if publicURL != "" {
		u, err := url.Parse(strings.TrimRight(publicURL, "/"))
		if err != nil || u.Hostname() == "" {
			return RP{}, fmt.Errorf("passkeys: web.public_url %q has no host", publicURL)
		}
		return RP{ID: u.Hostname(), Origin: u.Scheme + "://" + u.Host}, nil
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, ""
	}
	if !strings.EqualFold(h, "localhost") {
		return RP{}, fmt.Errorf("passkeys: the page is at %q; passkeys need localhost or web.public_url", host)
	}
	origin := "http://localhost"
	if port != "" {
		origin += ":" + port
	}
	return RP{ID: "localhost", Origin: origin}, nil
}

// CeremonyTTL is how long a challenge can be answered.
const CeremonyTTL = 5 * time.Minute

// webauthn is the library configured for rp: resident keys and user
// verification required, for registration and every assertion.
func (rp RP) webauthn() (*webauthn.WebAuthn, error) {
	return webauthn.New(&webauthn.Config{
		RPID:          rp.ID,
		RPDisplayName: "gateway",
		RPOrigins:     []string{rp.Origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL, TimeoutUVD: CeremonyTTL},
		},
	})
}
