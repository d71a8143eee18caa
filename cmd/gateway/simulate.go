package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// policySimulate is `gateway policy simulate [--since 7d] [--add-rule
// CAP:TARGET:ACTION]… [--remove-rule ID]… [--level AGENT=LEVEL]…`: the
// running gateway's POST /v1/policy/simulate (GATEWAY_URL, an admin
// GATEWAY_TOKEN), its answer printed as one JSON line.
func policySimulate(e *env, args []string) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	since := fs.String("since", "7d", "the window: a Go duration or whole days (7d)")
	urlFlag := fs.String("url", "", "gateway URL (env GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "an admin agent's token (env GATEWAY_ADMIN_TOKEN; default: the generated admin-token beside the database, else GATEWAY_TOKEN)")
	var adds, removes, levels repeated
	fs.Var(&adds, "add-rule", "a rule to add, CAPABILITY:TARGET:ACTION (e.g. 'code:exec:npm test*:approve'); repeatable")
	fs.Var(&removes, "remove-rule", "a rule id to remove (api:3, config:1); repeatable")
	fs.Var(&levels, "level", "an agent's level, AGENT=LEVEL (e.g. a1=Full); repeatable")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("simulate", pos); err != nil {
		return err
	}
	body := map[string]any{"since": *since, "remove_rules": []string(removes)}
	var rules []map[string]string
	for _, a := range adds {
		r, err := parseRuleFlag(a)
		if err != nil {
			return usagef("simulate: --add-rule %q: %v", a, err)
		}
		rules = append(rules, r)
	}
	body["add_rules"] = rules
	lv := map[string]string{}
	for _, l := range levels {
		agent, level, ok := strings.Cut(l, "=")
		if !ok || agent == "" {
			return usagef("simulate: --level %q: want AGENT=LEVEL", l)
		}
		lv[agent] = level
	}
	body["levels"] = lv
	c, err := adminClient(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	out, err := c.Simulate(e.ctx, body)
	if err != nil {
		return exitError{exitFail, "simulate: " + err.Error()}
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", out)
	return err
}

// parseRuleFlag reads CAPABILITY:TARGET:ACTION, where the capability has
// one colon (fs:read) and the action is the part after the last colon, so
// a target may hold colons itself.
func parseRuleFlag(s string) (map[string]string, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return nil, fmt.Errorf("want CAPABILITY:TARGET:ACTION")
	}
	head, action := s[:i], s[i+1:]
	parts := strings.SplitN(head, ":", 3)
	if len(parts) != 3 {
		return nil, fmt.Errorf("want CAPABILITY:TARGET:ACTION")
	}
	capability, target := parts[0]+":"+parts[1], parts[2] // the gateway checks the rule
	return map[string]string{"capability": capability, "target": target, "action": action}, nil
}

// policySuggest is `gateway policy suggest [--since 7d] [--min 3]`: the
// running gateway's suggestions (GATEWAY_URL, an admin GATEWAY_TOKEN), one
// JSON line each.
func policySuggest(e *env, args []string) error {
	fs := flag.NewFlagSet("suggest", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	since := fs.String("since", "7d", "the window: a Go duration or whole days (7d)")
	minCount := fs.Int("min", 3, "how many allows a family needs")
	urlFlag := fs.String("url", "", "gateway URL (env GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "an admin agent's token (env GATEWAY_ADMIN_TOKEN; default: the generated admin-token beside the database, else GATEWAY_TOKEN)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := noPositional("suggest", pos); err != nil {
		return err
	}
	c, err := adminClient(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	list, err := c.Suggestions(e.ctx, *since, *minCount)
	if err != nil {
		return exitError{exitFail, "suggest: " + err.Error()}
	}
	for _, s := range list {
		if _, err := fmt.Fprintf(e.stdout, "%s\n", s); err != nil {
			return err
		}
	}
	return nil
}

// adminClient is agentClient for the admin commands: the token from
// --token, else GATEWAY_ADMIN_TOKEN, else the generated local admin
// credential beside the configured database (config.AdminTokenFileName,
// when the file exists), else GATEWAY_TOKEN (an admin agent's, with a
// config that names one).
func adminClient(e *env, cfgPath, urlFlag, tokenFlag string) (*client.Client, error) {
	tok := firstNonEmpty(tokenFlag, e.getenv("GATEWAY_ADMIN_TOKEN"))
	if tok == "" {
		if cfg, err := loadDBConfig(e, cfgPath); err == nil && cfg.Storage.Driver != "postgres" {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg.Storage.Path), config.AdminTokenFileName)); err == nil {
				tok = strings.TrimSpace(string(b))
			}
		}
	}
	return agentClient(e, urlFlag, tok, "")
}
