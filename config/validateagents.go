// Validate's checks of the [[agents]] entries: ids, tokens, rates,
// capability lists and principals.

package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"

	"github.com/metnos/gateway/policy"
)

// With skipTokens (LoadOptions.SkipAgentTokens) a token_env is checked as a
// name only: its variable was not read.
func (c *Config) validateAgents(p *problems, skipTokens bool) {
	ids := map[string]int{}
	tokens := map[string]int{}
	for i := range c.Agents {
		a := &c.Agents[i]
		key := fmt.Sprintf("agents[%d]", i)
		switch {
		case a.ID == "":
			p.add(key+".id", "required")
		case !agentIDRE.MatchString(a.ID):
			p.add(key+".id", "bad id %q (want 1-64 of a-z, 0-9, _, . and -)", a.ID)
		default:
			if j, dup := ids[a.ID]; dup {
				p.add(key+".id", "%q is already agents[%d].id", a.ID, j)
			} else {
				ids[a.ID] = i
			}
		}
		switch {
		case skipTokens && a.TokenEnv != "":
			validEnvName(p, key+".token_env", a.TokenEnv)
		case a.TokenEnv != "" || a.Token == "":
			secret(p, key+".token_env", a.TokenEnv, a.Token, true)
		}
		if a.Token != "" && len(a.Token) < MinTokenLen {
			p.add(key+".token_env", "the token is %d characters; want at least %d (e.g. openssl rand -hex 24)", len(a.Token), MinTokenLen)
		}
		if a.MaxPending < 1 {
			p.add(key+".max_pending", "%d: want at least 1", a.MaxPending)
		}
		if a.MaxChildren < 1 {
			p.add(key+".max_children", "%d: want at least 1", a.MaxChildren)
		}
		if a.MaxStreams < 1 {
			p.add(key+".max_streams", "%d: want at least 1", a.MaxStreams)
		}
		for j, pat := range a.Callbacks {
			if err := callbackurl.CheckPattern(pat); err != nil {
				p.wrap(fmt.Sprintf("%s.callbacks[%d]", key, j), err)
			}
		}
		if a.Token != "" {
			if j, dup := tokens[a.Token]; dup {
				p.add(key+".token_env", "same token as agents[%d]: each agent needs its own", j)
			} else {
				tokens[a.Token] = i
			}
		}
		if a.Autonomy < policy.ReadOnly || a.Autonomy > policy.Full {
			p.add(key+".autonomy", "%w (want ReadOnly, Supervised or Full)", policy.ErrUnknownLevel)
		}
		if a.Channel == "" {
			p.add(key+".channel", "required (the default principal's channel, e.g. \"web\")")
		}
		if a.SenderID == "" {
			p.add(key+".sender_id", "required (the default principal, e.g. \"owner\")")
		}
		c.notifyChannels(p, key+".notify", a.Notify)
		if n, per, err := ParseRate(a.Rate); err != nil {
			p.wrap(key+".rate", err)
		} else {
			a.RateCount, a.RatePer = n, per
		}
		if a.CardsPerMinute < 0 {
			p.add(key+".cards_per_minute", "%d is negative (0 means no bound)", a.CardsPerMinute)
		}
		capList(p, key+".allow_capabilities", a.AllowCapabilities)
		capList(p, key+".deny_capabilities", a.DenyCapabilities)
		for j, pr := range a.Principals {
			if ch, snd, ok := strings.Cut(pr, ":"); !ok || ch == "" || snd == "" {
				p.add(fmt.Sprintf("%s.principals[%d]", key, j), "%q is not \"channel:sender_id\"", pr)
			}
		}
		validateAgentRun(p, key, a.Run)
		if a.Home != "" && (!filepath.IsAbs(a.Home) || strings.ContainsAny(a.Home, "*?[{\x00")) {
			p.add(key+".home", "%q is not an absolute directory without wildcards", a.Home)
		}
		for j, w := range a.Workspace {
			k := fmt.Sprintf("%s.workspace[%d]", key, j)
			switch {
			case !filepath.IsAbs(w) && w != "~" && !strings.HasPrefix(w, "~/"):
				p.add(k, "%q is not an absolute directory or one under ~/", w)
			case strings.ContainsAny(w, "*?[{\x00"):
				p.add(k, "%q holds a wildcard or a NUL byte: name directories", w)
			case filepath.Clean(w) == "/":
				p.add(k, "%q is the whole file system: leave workspace out instead", w)
			}
		}
	}
}

// ParseRate reads an agent rate, "N/s", "N/m" or "N/h" with N ≥ 1: N
// requests per period per capability, with a burst of N.
func ParseRate(s string) (count int, per time.Duration, err error) {
	m := rateRE.FindStringSubmatch(s)
	if m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil && n >= 1 {
			per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[m[2]]
			return n, per, nil
		}
	}
	return 0, 0, fmt.Errorf("bad rate %q (want N/s, N/m or N/h with N ≥ 1, e.g. \"60/m\")", s)
}

func capList(p *problems, key string, caps []string) {
	for i, name := range caps {
		if _, err := policy.Lookup(name); err != nil {
			p.wrap(fmt.Sprintf("%s[%d]", key, i), err)
		}
	}
}

// secret checks a *_env key and the value it resolved to. It names the
// variable, never the value; a malformed name is not echoed either, since a
// misplaced secret is the likeliest malformed name.
func secret(p *problems, key, envName, value string, required bool) {
	switch {
	case envName == "" && value == "":
		if required {
			p.add(key, "required (the name of an environment variable holding the secret)")
		}
	case envName == "":
	case !validEnvName(p, key, envName):
	case value == "":
		p.wrap(key, unsetSecret(envName))
	}
}

// errSecretUnset is what every unset secret is (errors.Is), so that
// LoadOptions.SkipSecrets can leave them out.
var errSecretUnset = errors.New("secret unset")

// unsetSecret names the empty variable, never a value.
type unsetSecret string

func (u unsetSecret) Error() string        { return string(u) + " is empty" }
func (u unsetSecret) Is(target error) bool { return target == errSecretUnset }

// validEnvName reports a *_env key whose value is not a variable name.
func validEnvName(p *problems, key, name string) bool {
	if !envNameRE.MatchString(name) {
		p.add(key, "not an environment variable name (want letters, digits and _, e.g. SLACK_BOT_TOKEN; the secret itself belongs in the environment, not in this file)")
		return false
	}
	return true
}
