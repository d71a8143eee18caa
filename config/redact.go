// What may be shown of a config: its secrets replaced by "[redacted]", in
// every log line a Config is written to (LogValue) and wherever it is printed.

package config

import (
	"log/slog"
)

const redacted = "[redacted]"

// Redacted returns a copy in which every secret that is set reads
// "[redacted]" (an unset one stays empty, so `config show` tells the two
// apart). The copy shares nothing mutable with c.
func (c Config) Redacted() Config {
	r := c
	r.Storage.DSN = redact(c.Storage.DSN)
	r.Web.AdminToken = redact(c.Web.AdminToken)
	r.Policy.Rules = append([]Rule(nil), c.Policy.Rules...)
	r.Approvals.AllowFor = append([]Duration(nil), c.Approvals.AllowFor...)
	if c.Policy.Notify != nil {
		r.Policy.Notify = make([]Notify, len(c.Policy.Notify))
		for i, n := range c.Policy.Notify {
			n.WebhookSecret = redact(n.WebhookSecret)
			n.Deliveries = append([]string(nil), n.Deliveries...)
			r.Policy.Notify[i] = n
		}
	}
	if c.Approvals.Routes != nil {
		r.Approvals.Routes = make([]Route, len(c.Approvals.Routes))
		for i, rt := range c.Approvals.Routes {
			rt.Notify = append([]string(nil), rt.Notify...)
			rt.Approvers = append([]string(nil), rt.Approvers...)
			rt.EscalateTo = append([]string(nil), rt.EscalateTo...)
			r.Approvals.Routes[i] = rt
		}
	}
	if c.Agents != nil {
		r.Agents = make([]Agent, len(c.Agents))
		for i, a := range c.Agents {
			a.Token = redact(a.Token)
			a.Notify = append([]string(nil), a.Notify...)
			a.AllowCapabilities = append([]string(nil), a.AllowCapabilities...)
			a.DenyCapabilities = append([]string(nil), a.DenyCapabilities...)
			r.Agents[i] = a
		}
	}
	r.MCP = redactedMCP(c.MCP)
	if c.sections != nil {
		r.sections = make([]namedSection, len(c.sections))
		for i, s := range c.sections {
			r.sections[i] = namedSection{s.name, redactedSection(s.value)}
		}
	}
	r.Hooks = c.Hooks.redacted()
	return r
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// shown is Config without methods, so that LogValue does not recurse.
type shown Config

// LogValue makes slog print the redacted copy, so logging a Config never leaks a secret.
func (c Config) LogValue() slog.Value { return slog.AnyValue(shown(c.Redacted())) }
