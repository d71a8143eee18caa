package main

import (
	"errors"
	"flag"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/vaglio"
)

// configFlag adds --config to fs; the value defaults to $GATEWAY_CONFIG.
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "config file (env GATEWAY_CONFIG)")
}

// loadConfig loads the config named by --config or GATEWAY_CONFIG (which
// must exist), else the default path if it exists, else the defaults.
func loadConfig(e *env, path string) (config.Config, error) {
	return loadConfigWith(e, path, config.LoadOptions{})
}

// loadDBConfig is loadConfig for the commands that only open the database
// or look for the server (policy, audit, prune, migrate, login, logout;
// ask, hook and mcp without GATEWAY_URL): they never serve, authenticate
// nor talk to a messenger, so no secret variable is read and none need be
// set.
func loadDBConfig(e *env, path string) (config.Config, error) {
	return loadConfigWith(e, path, config.LoadOptions{SkipSecrets: true})
}

func loadConfigWith(e *env, path string, opt config.LoadOptions) (config.Config, error) {
	explicit := path != "" || e.getenv("GATEWAY_CONFIG") != ""
	if path == "" {
		path = config.DefaultPath(e.getenv)
	}
	opt.Sections = messenger.Sections(messengerKinds)
	cfg, err := config.LoadWith(path, explicit, e.getenv, opt)
	if err != nil {
		return config.Config{}, exitError{exitUsage, "config: " + err.Error()}
	}
	return cfg, nil
}

// openDB loads the config at path, as loadDBConfig does, and opens its database.
func openDB(e *env, path string) (*storage.DB, error) {
	cfg, err := loadDBConfig(e, path)
	if err != nil {
		return nil, err
	}
	return storage.OpenConfig(e.ctx, storageConfig(cfg))
}

func normalizer(e *env) policy.Normalizer { return policy.Normalizer{Home: e.getenv("HOME")} }

// openGrants opens the database and its grants store.
func openGrants(e *env, cfg config.Config) (*storage.DB, *policy.GrantStore, error) {
	db, err := storage.OpenConfig(e.ctx, storageConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	return db, policy.NewGrantStore(db, normalizer(e), time.Now), nil
}

func cmdPolicy(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("policy: missing subcommand (registry, table, check, grants, grant, revoke, rules, test, simulate, suggest, import)")
	}
	sub, rest := args[0], args[1:]
	if isHelp(sub) {
		return helpError{name: "policy"}
	}
	switch sub {
	case "registry":
		return policyRegistry(e, rest)
	case "table":
		return policyTable(e, rest)
	case "check":
		return policyCheck(e, rest)
	case "grants":
		return policyGrants(e, rest)
	case "grant":
		return policyGrant(e, rest)
	case "revoke":
		return policyRevoke(e, rest)
	case "rules":
		return policyRules(e, rest)
	case "test":
		return policyTest(e, rest)
	case "simulate":
		return policySimulate(e, rest)
	case "suggest":
		return policySuggest(e, rest)
	case "import":
		return policyImport(e, rest)
	}
	return usagef("policy: unknown subcommand %q (registry, table, check, grants, grant, revoke, rules, test, simulate, suggest, import)", sub)
}

func noPositional(name string, pos []string) error {
	if len(pos) > 0 {
		return usagef("%s: unexpected argument %q", name, pos[0])
	}
	return nil
}

// parseNoArgs parses the flags of a command that takes no positional
// arguments: an unexpected one is named before --help is answered.
func parseNoArgs(fs *flag.FlagSet, name string, args []string) error {
	pos, err := parseFlags(fs, args)
	if err := noPositional(name, pos); err != nil {
		return err
	}
	return err
}

func policyRegistry(e *env, args []string) error {
	return policyList(e, args, "registry", policy.Registry)
}

func policyTable(e *env, args []string) error {
	return policyList(e, args, "table", policy.Table)
}

// policyList is a policy subcommand that takes no arguments and prints
// rows, one JSON line each.
func policyList[T any](e *env, args []string, name string, rows func() []T) error {
	fs := flag.NewFlagSet("policy "+name, flag.ContinueOnError)
	configFlag(fs)
	pos, err := parseFlags(fs, args)
	if err := noPositional(name, pos); err != nil {
		return err
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	for _, r := range rows() {
		if err := printJSONLine(e.stdout, r); err != nil {
			return err
		}
	}
	return nil
}

func policyCheck(e *env, args []string) error {
	fs := flag.NewFlagSet("policy check", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	channel := fs.String("channel", "", "principal channel")
	sender := fs.String("sender", "", "principal sender id")
	target := fs.String("target", "", "target")
	agent := fs.String("agent", "", "decide under this agent's profile from the config")
	intent := fs.String("intent", "", "intent")
	executor := fs.String("executor", "", "executor")
	explain := fs.Bool("explain", false, "print the trace of every layer")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("check: want LEVEL CAPABILITY, got %d argument(s)", len(pos))
	}
	level, err := policy.ParseLevel(pos[0])
	if err != nil {
		return usagef("check: LEVEL: %v", err)
	}
	c, err := policy.Lookup(pos[1])
	if err != nil {
		return usagef("check: CAPABILITY: %v", err)
	}
	if *target == "" && c.TargetKind != policy.KindNone {
		// The seed's policy check: without a target, the table's word.
		return printTableOnly(e, level, c, *explain)
	}
	if err := policy.ValidateTarget(c, *target); err != nil {
		return usagef("check: --target: %v", err)
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	profile := policy.Profile{Agent: "cli", Ceiling: policy.Full}
	if *agent != "" {
		var a config.Agent
		for _, x := range cfg.Agents {
			if x.ID == *agent {
				a = x
			}
		}
		if a.ID == "" {
			return usagef("check: --agent: no agent %q in the config", *agent)
		}
		profile = a.Profile()
		if *channel == "" && *sender == "" {
			*channel, *sender = a.Channel, a.SenderID
		}
	}
	db, grants, err := openGrants(e, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	vg := vaglio.New(vaglio.Options{Threshold: cfg.Vaglio.JudgeThreshold, LogDir: cfg.Vaglio.LogDir, Home: e.getenv("HOME"),
		Judge: gateway.NewJudge(cfg.Vaglio, nil), Own: gateway.OwnGuard(cfg, cfg.Server.Listen, e.getenv)})
	defer vg.Close() // the decision log is buffered
	rules := policy.NewRuleStore(db, cfg.PolicyRules(), cfg.HasAgent, nil)
	defer rules.Close()
	d := policy.Decider{Source: rules, Grants: grants, Norm: normalizer(e), Vaglio: vg}
	dec, err := d.Decide(e.ctx, policy.Input{
		Profile: profile, Capability: c.Name, Target: *target, Requested: level,
		Channel: *channel, SenderID: *sender, Intent: *intent, Executor: *executor, DryRun: true,
	})
	var fe *policy.FieldError
	if errors.As(err, &fe) {
		return usagef("check: %v", fe)
	}
	if err != nil {
		return err
	}
	out := map[string]any{"outcome": dec.Outcome, "reason": dec.Reason}
	if *explain {
		out["trace"] = dec.Trace
		out["autonomy"] = dec.Autonomy
		if dec.BlockedBy != "" {
			out["blocked_by"] = dec.BlockedBy
		}
		if dec.GrantID != 0 {
			out["grant_id"] = dec.GrantID
		}
		if dec.Vaglio != nil {
			out["vaglio"] = dec.Vaglio
		}
	}
	return printJSONLine(e.stdout, out)
}

// printTableOnly answers a target-less `policy check` with the autonomy
// table's outcome (vaglio seed §7, policy seed §7): rules, grants and
// vaglio all need a target, so they are not consulted, and the reason says
// so.
func printTableOnly(e *env, level policy.Level, c policy.Capability, explain bool) error {
	outcome := policy.TableOutcome(level, c)
	out := map[string]any{"outcome": outcome,
		"reason": fmt.Sprintf("table: %s at %s is %s (no --target: rules, grants and vaglio not consulted)", c.Name, level, outcome)}
	if explain {
		out["autonomy"] = level
		out["trace"] = []policy.Step{{Layer: "table", Outcome: outcome, Detail: fmt.Sprintf("%s at %s", c.Name, level)}}
	}
	return printJSONLine(e.stdout, out)
}

func policyGrants(e *env, args []string) error {
	fs := flag.NewFlagSet("policy grants", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	channel := fs.String("channel", "", "only this principal channel")
	sender := fs.String("sender", "", "only this sender id")
	all := fs.Bool("all", false, "include revoked and expired grants")
	if err := parseNoArgs(fs, "grants", args); err != nil {
		return err
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	db, grants, err := openGrants(e, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := grants.List(e.ctx, policy.GrantFilter{Channel: *channel, SenderID: *sender, All: *all})
	if err != nil {
		return err
	}
	for _, g := range list {
		if err := printJSONLine(e.stdout, g); err != nil {
			return err
		}
	}
	return nil
}

func policyGrant(e *env, args []string) error {
	fs := flag.NewFlagSet("policy grant", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	channel := fs.String("channel", "", "principal channel (required)")
	sender := fs.String("sender", "", "principal sender id (required)")
	capability := fs.String("capability", "", "capability (required)")
	target := fs.String("target", "", "target or target pattern")
	ttl := fs.String("ttl", "", "lifetime, e.g. 720h or 90d (default policy.grant_ttl; 0 = never expires)")
	agent := fs.String("agent", "", "the agent the grant is for (default: every agent of the principal)")
	if err := parseNoArgs(fs, "grant", args); err != nil {
		return err
	}
	for name, v := range map[string]string{"--channel": *channel, "--sender": *sender, "--capability": *capability} {
		if v == "" {
			return usagef("grant: %s is required", name)
		}
	}
	c, err := policy.Lookup(*capability)
	if err != nil {
		return usagef("grant: --capability: %v", err)
	}
	if c.DefaultApproval == policy.ApprovalAlways {
		return usagef("grant: --capability: %s needs approval every time and never gets a grant; use an approve rule in [[policy.rules]]", c.Name)
	}
	if err := policy.ValidateTarget(c, *target); err != nil {
		return usagef("grant: --target: %v", err)
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	if cfg.Web.PolicyPasskey() {
		return errPolicyStepUp("grant")
	}
	if *agent != "" && !slices.ContainsFunc(cfg.Agents, func(a config.Agent) bool { return a.ID == *agent }) {
		return usagef("grant: --agent: %q is not an agent of the config", *agent)
	}
	life := time.Duration(cfg.Policy.GrantTTL)
	if *ttl != "" {
		if life, err = duration.Parse(*ttl); err == nil && life < 0 {
			err = fmt.Errorf("a negative duration %q", *ttl)
		}
		if err != nil {
			return usagef("grant: --ttl: %v", err)
		}
	}
	db, grants, err := openGrants(e, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := grants.Record(e.ctx, policy.NewGrant{
		Principal:  policy.Principal{Channel: *channel, SenderID: *sender},
		Capability: c.Name, Target: *target, GrantedBy: cliActor(e), TTL: life, Agent: *agent,
	})
	if err != nil {
		return err
	}
	warnNotLifted(e, fmt.Sprintf("grant #%d", g.ID),
		cfg.Guards(g.Agent, func(cp policy.Capability) bool { return cp.Name == g.Capability }))
	return printJSONLine(e.stdout, g)
}

func policyRevoke(e *env, args []string) error {
	fs := flag.NewFlagSet("policy revoke", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("revoke: want one grant ID, got %d argument(s)", len(pos))
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("revoke: ID: %q is not a grant id", pos[0])
	}
	cfg, err := loadDBConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	db, grants, err := openGrants(e, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	changed, err := grants.Revoke(e.ctx, id, "revoked", cliActor(e))
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintln(e.stdout, "revoked")
	} else {
		fmt.Fprintln(e.stdout, "no-op")
	}
	return nil
}

// cliActor names who acted from the command line, for granted_by and audit.
func cliActor(e *env) string {
	if u := e.getenv("USER"); u != "" {
		return "cli:" + u
	}
	if u, err := user.Current(); err == nil {
		return "cli:" + u.Username
	}
	return "cli"
}

// errPolicyStepUp refuses, as the admin API refuses with 403
// step_up_required, an approve rule or a grant from the command line while
// [web] policy_step_up = "passkey": each such change is an admin's passkey
// assertion on the web page.
func errPolicyStepUp(cmd string) error {
	return exitError{exitFail, cmd + ": step_up_required: [web] policy_step_up is on: an admin adds approve rules and " +
		"grants on the web page, with a passkey"}
}

// policyStepUp is errPolicyStepUp when the config at cfgPath turns
// policy_step_up on.
func policyStepUp(e *env, cfgPath, cmd string) error {
	cfg, err := loadDBConfig(e, cfgPath)
	if err != nil {
		return err
	}
	if cfg.Web.PolicyPasskey() {
		return errPolicyStepUp(cmd)
	}
	return nil
}

// warnNotLifted tells, on stderr, the guarded routes what (a rule or a
// grant just written) cannot lift.
func warnNotLifted(e *env, what string, guards []*policy.Guard) {
	for _, line := range config.NotLifted(guards) {
		fmt.Fprintf(e.stderr, "note: %s %s\n", what, line)
	}
}
