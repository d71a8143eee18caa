// The web page's section ([web]): its users and their roles.

package config

// NotifyWeb is the web page as a place cards go (agents[].notify); the
// other places are the registered messengers (see Messenger).
const NotifyWeb = "web"

// Web is the [web] table. The web page is always on; every visit needs a
// session, started by a one-time login link (or the admin token).
type Web struct {
	// AdminTokenEnv names the variable holding the login token that lets
	// non-loopback clients in. Empty: non-loopback clients are refused.
	AdminTokenEnv string `toml:"admin_token_env"`
	// AdminToken is the resolved login token (secret).
	AdminToken string `toml:"-"`
	// Language of the web page: "en" (the default) or "it".
	Language string `toml:"language"`
	// PublicURL is the address people reach the web page at
	// (web.public_url, e.g. "https://gateway.example.com"). Cards link
	// there to a request's own page, /r/{id}, where every field is shown
	// whole; empty means cards name the path only.
	PublicURL string `toml:"public_url"`
	// Users are the people who log in to the web page ([[web.users]]),
	// each by a one-time link from `gateway login --user NAME`; a decision
	// taken there is "web:<name>". Default: one user, "owner".
	Users []WebUser `toml:"users"`
	// PolicyStepUp "passkey" makes every change of rules and grants on
	// the page an admin's passkey assertion over the change, and keeps the
	// admin agent's API from adding approve rules and grants; "" or
	// "none": a tap (and the admin agent may).
	PolicyStepUp string `toml:"policy_step_up"`
}

// WebUser is one [[web.users]] entry.
type WebUser struct {
	Name string `toml:"name"`
	// Role is RoleAdmin or RoleApprover; "" takes the default: the first
	// user is the admin, the others approvers (see Web.RoleOf).
	Role string `toml:"role"`
}

// The roles of a web user. An approver decides what routes and channels
// let them decide; only an admin adds or changes rules, grants, tokens
// and users' sessions.
const (
	RoleAdmin    = "admin"
	RoleApprover = "approver"
)

// RoleOf is the role of the web user name: the one configured, else admin
// for the first user and approver for the others; "" for no such user.
func (w Web) RoleOf(name string) string {
	for i, u := range w.Users {
		switch {
		case u.Name != name:
		case u.Role != "":
			return u.Role
		case i == 0:
			return RoleAdmin
		default:
			return RoleApprover
		}
	}
	return ""
}

// IsAdmin reports whether the web user name is an admin.
func (w Web) IsAdmin(name string) bool { return w.RoleOf(name) == RoleAdmin }

// PolicyPasskey reports whether policy changes on the page need an
// admin's passkey ([web] policy_step_up = "passkey").
func (w Web) PolicyPasskey() bool { return w.PolicyStepUp == StepUpPasskey }

// DefaultWebUser is the web user of a config that names none.
const DefaultWebUser = "owner"

// WebUser reports whether name is a configured web user.
func (w Web) WebUser(name string) bool {
	for _, u := range w.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}
