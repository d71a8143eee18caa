package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// policyCase is one [[case]] of a policy test file.
type policyCase struct {
	Name       string `toml:"name"`
	Level      string `toml:"level"`
	Capability string `toml:"capability"`
	Target     string `toml:"target"`
	Agent      string `toml:"agent"`
	Channel    string `toml:"channel"`
	Sender     string `toml:"sender"`
	Intent     string `toml:"intent"`
	Executor   string `toml:"executor"`
	Expect     string `toml:"expect"`
}

// label is how a case is named in the output: its name, else "case N".
func (c policyCase) label(i int) string {
	if c.Name != "" {
		return c.Name
	}
	return fmt.Sprintf("case %d", i+1)
}

// policyTest is `gateway policy test [--config F] FILE`: every case of FILE
// decided by the config's autonomy table, agents, [[policy.rules]] and the
// guard (no database: no grants and no rules added at run time, so a config
// change can be checked in CI before it ships). Each case whose outcome
// differs is printed with the outcome and the reason, then a summary line;
// exit 0 when all pass, 1 when any fails, 2 for a malformed file.
func policyTest(e *env, args []string) error {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("test: want one FILE of [[case]] tables")
	}
	cases, err := readPolicyCases(pos[0])
	if err != nil {
		return usagef("test: %v", err)
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	vg := vaglio.New(vaglio.Options{Threshold: cfg.Vaglio.JudgeThreshold, Home: e.getenv("HOME")}) // no log: nothing is decided for real
	defer vg.Close()
	d := policy.Decider{Rules: cfg.PolicyRules(), Norm: normalizer(e), Vaglio: vg}
	failed := 0
	for i, c := range cases {
		in, err := c.input(cfg)
		if err != nil {
			return usagef("test: %s: %v", c.label(i), err)
		}
		dec, err := d.Decide(e.ctx, in)
		if err != nil {
			return usagef("test: %s: %v", c.label(i), err)
		}
		if string(dec.Outcome) != c.Expect {
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %s %s at %s: want %s, got %s (%s)\n", c.label(i), c.Capability,
				c.Target, in.Requested, c.Expect, dec.Outcome, dec.Reason)
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stdout, "%d of %d cases failed\n", failed, len(cases))
		return exitError{code: exitFail}
	}
	fmt.Fprintf(e.stdout, "all %d cases passed\n", len(cases))
	return nil
}

// readPolicyCases reads a test file strictly: unknown keys, a file with no
// case, a bad level, capability or expect are errors naming the case.
func readPolicyCases(path string) ([]policyCase, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Case []policyCase `toml:"case"`
	}
	md, err := toml.Decode(string(raw), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		keys := make([]string, len(un))
		for i, k := range un {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%s: unknown keys %s", path, strings.Join(keys, ", "))
	}
	if len(f.Case) == 0 {
		return nil, fmt.Errorf("%s: no [[case]]", path)
	}
	for i, c := range f.Case {
		switch {
		case c.Level == "":
			return nil, fmt.Errorf("%s: level is required", c.label(i))
		case c.Capability == "":
			return nil, fmt.Errorf("%s: capability is required", c.label(i))
		}
		switch policy.Outcome(c.Expect) {
		case policy.Allowed, policy.Denied, policy.ApprovalRequired:
		default:
			return nil, fmt.Errorf("%s: expect %q is not allowed, denied or approval_required", c.label(i), c.Expect)
		}
	}
	return f.Case, nil
}

// input is the case as a decision's input: its agent's profile (a
// config agent, or a test agent with no ceiling below Full), the
// principal the agent would use unless the case names one.
func (c policyCase) input(cfg config.Config) (policy.Input, error) {
	level, err := policy.ParseLevel(c.Level)
	if err != nil {
		return policy.Input{}, fmt.Errorf("level: %v", err)
	}
	if _, err := policy.Lookup(c.Capability); err != nil {
		return policy.Input{}, fmt.Errorf("capability: %v", err)
	}
	in := policy.Input{Profile: policy.Profile{Agent: "policy-test", Ceiling: policy.Full}, Capability: c.Capability,
		Target: c.Target, Requested: level, Channel: c.Channel, SenderID: c.Sender, Intent: c.Intent,
		Executor: c.Executor, DryRun: true}
	if c.Agent != "" {
		found := false
		for _, a := range cfg.Agents {
			if a.ID == c.Agent {
				in.Profile, found = a.Profile(), true
				if in.Channel == "" && in.SenderID == "" {
					in.Channel, in.SenderID = a.Channel, a.SenderID
				}
			}
		}
		if !found {
			return policy.Input{}, fmt.Errorf("agent: no agent %q in the config", c.Agent)
		}
	}
	return in, nil
}
