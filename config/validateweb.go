// Validate's checks of the web page's users, and of URLs.

package config

import (
	"fmt"
	"net/url"
)

// httpURL accepts an absolute http or https URL with a host.
func httpURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http or https URL")
	case u.Host == "":
		return fmt.Errorf("no host")
	}
	return nil
}

func (c *Config) validateWebUsers(p *problems) {
	if len(c.Web.Users) == 0 {
		p.add("web.users", "at least one [[web.users]] (the default is one user, %q)", DefaultWebUser)
	}
	seen := map[string]int{}
	for i, u := range c.Web.Users {
		key := fmt.Sprintf("web.users[%d].name", i)
		if !webLoginRE.MatchString(u.Name) {
			p.add(key, "bad name %q (want 1-64 of letters, digits, _, ., @ and -)", u.Name)
		} else if j, dup := seen[u.Name]; dup {
			p.add(key, "%q is already web.users[%d].name", u.Name, j)
		} else {
			seen[u.Name] = i
		}
		if u.Role != "" && u.Role != RoleAdmin && u.Role != RoleApprover {
			p.add(fmt.Sprintf("web.users[%d].role", i), "unknown role %q (want %q or %q)", u.Role, RoleAdmin, RoleApprover)
		}
	}
	admins := 0
	for _, u := range c.Web.Users {
		if c.Web.IsAdmin(u.Name) {
			admins++
		}
	}
	if len(c.Web.Users) > 0 && admins == 0 {
		p.add("web.users", "no user is an admin: give one role = %q (the default makes the first user the admin)", RoleAdmin)
	}
	switch c.Web.PolicyStepUp {
	case "", StepUpNone:
	case StepUpPasskey:
		if admins == 0 {
			p.add("web.policy_step_up", "%q needs an admin web user to sign policy changes", StepUpPasskey)
		}
	default:
		p.add("web.policy_step_up", "unknown value %q (want %q or %q)", c.Web.PolicyStepUp, StepUpNone, StepUpPasskey)
	}
}
