// The secrets a config resolved from the environment, so that a program
// the gateway starts (gateway run) can be given an environment without them.

package config

// Secrets lists every secret value the config holds that is set: the
// agents' and the admin's tokens, the database DSN, webhook secrets, the
// judge's API key, the MCP servers' tokens, and the registered sections'
// (the messengers' tokens and signing secrets). Redacted hides the same fields.
func (c Config) Secrets() []string {
	var out []string
	add := func(s ...string) {
		for _, v := range s {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	add(c.Storage.DSN, c.Web.AdminToken, c.Vaglio.LLM.APIKey)
	for _, n := range c.Policy.Notify {
		add(n.WebhookSecret)
	}
	for _, a := range c.Agents {
		add(a.Token)
	}
	for _, s := range c.MCP.Servers {
		add(s.Token)
	}
	for _, s := range c.sections {
		add(setSecrets(s.value)...)
	}
	return out
}
