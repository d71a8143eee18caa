package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/policyimport"
)

// policyImport is `gateway policy import --from AGENT [FILE…]`: the
// agent's permission files (its default locations when none is named)
// as [[policy.rules]] TOML on stdout, each rule under a comment naming
// the file and line it came from. Every rule passes policy.CheckRule, as
// one written by hand: a refused one is listed on stderr with why, as is
// every entry that makes no rule. --simulate notes under each rule how
// many of the window's requests it would decide, and change (POST
// /v1/policy/simulate); --apply adds the rules at run time through POST
// /v1/policy/rules instead of printing TOML (an admin's token; each an
// audit row), in the order printed, after the run-time rules already
// there.
func policyImport(e *env, args []string) error {
	fs := flag.NewFlagSet("policy import", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	from := fs.String("from", "", "the agent whose permissions to read: "+policyimport.Names())
	apply := fs.Bool("apply", false, "add the rules to the running gateway instead of printing them")
	simulate := fs.Bool("simulate", false, "note under each rule how many of the window's requests it would decide, and change")
	since := fs.String("since", "7d", "--simulate's window: a Go duration or whole days (7d)")
	urlFlag := fs.String("url", "", "gateway URL (env GATEWAY_URL)")
	tokenFlag := fs.String("token", "", "an admin agent's token (env GATEWAY_ADMIN_TOKEN; default: the generated admin-token beside the database, else GATEWAY_TOKEN)")
	files, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	f, ok := policyimport.Named(*from)
	if !ok {
		return usagef("import: --from: want %s, got %q", policyimport.Names(), *from)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	res, err := policyimport.Import(f, policyimport.Env{Home: e.getenv("HOME"), Cwd: cwd, Getenv: e.getenv}, files)
	if err != nil {
		return exitError{exitFail, "import: " + err.Error()}
	}
	var valid []policyimport.Rule
	for _, r := range res.Rules {
		errs := policy.CheckRule(policy.Rule{Capability: r.Capability, Target: r.Target, Action: r.Action}, nil)
		if len(errs) == 0 {
			valid = append(valid, r)
			continue
		}
		var why []string
		for _, fe := range errs {
			why = append(why, fe.Error())
		}
		fmt.Fprintf(e.stderr, "refused: %s %s: %s %q %s: %s\n", plain(r.Source), plain(r.Entry), r.Capability, r.Target, r.Action, plain(strings.Join(why, "; ")))
	}
	if cfg, err := loadDBConfig(e, *cfgPath); err == nil {
		for _, r := range valid {
			warnNotLifted(e, "rule from "+plain(r.Source), cfg.RuleGuards(policy.Rule{Capability: r.Capability, Target: r.Target, Action: r.Action}))
		}
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(e.stderr, "not imported: %s %s: %s\n", plain(s.Source), plain(s.Entry), plain(s.Why))
	}
	fmt.Fprintf(e.stderr, "%s: %d rules from %s; %d refused, %d not imported\n", f.Label, len(valid),
		plain(strings.Join(res.Files, ", ")), len(res.Rules)-len(valid), len(res.Skipped))
	var c *client.Client
	if *apply || *simulate {
		if c, err = adminClient(e, *cfgPath, *urlFlag, *tokenFlag); err != nil {
			return err
		}
	}
	notes := make([]string, len(valid))
	if *simulate {
		for i, r := range valid {
			if notes[i], err = simulateRule(e, c, r, *since); err != nil {
				return err
			}
		}
	}
	if *apply {
		for i, r := range valid {
			out, err := c.AddRule(e.ctx, map[string]any{"capability": r.Capability, "target": r.Target,
				"action": r.Action, "position": "bottom"})
			if err != nil {
				return exitError{exitFail, fmt.Sprintf("import: --apply: %s (%d of %d rules added): %v", plain(r.Source), i, len(valid), err)}
			}
			if _, err := fmt.Fprintf(e.stdout, "%s\n", out); err != nil {
				return err
			}
		}
		return nil
	}
	return printImported(e, f, valid, notes)
}

// printImported writes the rules as [[policy.rules]] TOML.
func printImported(e *env, f policyimport.Format, rules []policyimport.Rule, notes []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s's permissions, by `gateway policy import --from %s`\n", f.Label, f.Name)
	for i, r := range rules {
		fmt.Fprintf(&b, "\n# %s %s\n", plain(r.Source), plain(r.Entry))
		if notes[i] != "" {
			fmt.Fprintf(&b, "# %s\n", notes[i])
		}
		fmt.Fprintf(&b, "[[policy.rules]]\ncapability = %s\ntarget = %s\naction = %s\n",
			tomlQuote(r.Capability), tomlQuote(r.Target), tomlQuote(string(r.Action)))
	}
	_, err := fmt.Fprint(e.stdout, b.String())
	return err
}

// plain is s, from an agent's file or its name, fit for one line of a
// terminal or a TOML comment: every control character (a line break, an
// escape sequence) written as \xNN.
func plain(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// tomlQuote quotes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// simulateRule replays the window with r added where --apply adds it
// (below the run-time rules), measured against the policy as it stands,
// and says how many requests it would decide (it is the rule that
// matches them first) and how many of those would change.
func simulateRule(e *env, c *client.Client, r policyimport.Rule, since string) (string, error) {
	raw, err := c.Simulate(e.ctx, map[string]any{"since": since, "against": "policy",
		"add_rules": []map[string]any{{"capability": r.Capability, "target": r.Target, "action": r.Action, "position": "bottom"}}})
	if err != nil {
		return "", exitError{exitFail, "import: --simulate: " + err.Error()}
	}
	var res struct {
		Total   int            `json:"total"`
		Changed []any          `json:"changed"`
		Counts  map[string]int `json:"counts"`
		Decided map[string]int `json:"decided"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", exitError{exitFail, "import: --simulate: an answer that is not a simulation: " + err.Error()}
	}
	decided, ok := res.Decided["simulated:1"]
	if !ok {
		return "", exitError{exitFail, "import: --simulate: the gateway's answer does not say how many requests the rule decides (an older gateway?)"}
	}
	var flips []string
	for k, n := range res.Counts {
		if before, after, _ := strings.Cut(k, "->"); before != after {
			flips = append(flips, k+" "+strconv.Itoa(n))
		}
	}
	sort.Strings(flips)
	note := fmt.Sprintf("last %s: would decide %d of %d requests, %d of them changed", since, decided, res.Total, len(res.Changed))
	if len(flips) > 0 {
		note += " (" + strings.Join(flips, ", ") + ")"
	}
	return note, nil
}
