package main

import (
	"errors"
	"flag"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// openRules opens the database and the rule store over it (the config's
// rules plus those added at run time).
func openRules(e *env, cfg config.Config) (*storage.DB, *policy.RuleStore, error) {
	db, err := storage.OpenConfig(e.ctx, storageConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	return db, policy.NewRuleStore(db, cfg.PolicyRules(), cfg.HasAgent, nil), nil
}

// withRules loads the config at cfgPath, opens the rule store over its
// database, runs fn with it and closes both.
func withRules(e *env, cfgPath string, fn func(*policy.RuleStore) error) error {
	cfg, err := loadDBConfig(e, cfgPath)
	if err != nil {
		return err
	}
	db, rules, err := openRules(e, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	defer rules.Close()
	return fn(rules)
}

// policyRules is `gateway policy rules [add|update|rm]`: it works on the
// database directly, with or without a running server, whose very next
// decision sees the change.
func policyRules(e *env, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			return rulesAdd(e, args[1:])
		case "update":
			return rulesUpdate(e, args[1:])
		case "rm":
			return rulesRemove(e, args[1:])
		}
	}
	fs := flag.NewFlagSet("policy rules", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if len(pos) > 0 {
		return usagef("rules: unknown subcommand %q (add, update, rm; none to list)", pos[0])
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	return withRules(e, *cfgPath, func(rules *policy.RuleStore) error {
		list, err := rules.List(e.ctx)
		if err != nil {
			return err
		}
		for _, ri := range list {
			if err := printJSONLine(e.stdout, ri); err != nil {
				return err
			}
		}
		return nil
	})
}

// ruleFlags are the flags of add and update.
type ruleFlags struct {
	capability, target, action, sender, agent, channel, position *string
}

func newRuleFlags(fs *flag.FlagSet, withCapability bool) ruleFlags {
	var f ruleFlags
	if withCapability {
		f.capability = fs.String("capability", "", "capability: a name, * or a prefix such as fs:* (required)")
	}
	f.target = fs.String("target", "", "target glob (* for any)")
	f.action = fs.String("action", "", "approve, require_approval or block")
	f.sender = fs.String("sender", "", "scope: only this sender id")
	f.agent = fs.String("agent", "", "scope: only this agent")
	f.channel = fs.String("channel", "", "scope: only this channel")
	f.position = fs.String("position", "", "top (default), bottom or a number within the owner")
	return f
}

// ruleError turns a store error into the CLI's answer: a bad field is a
// usage error naming its flag, a config rule or an unknown id exit 1.
func ruleError(cmd string, err error) error {
	var fe *policy.FieldError
	switch {
	case errors.As(err, &fe):
		flagName := map[string]string{"sender_id": "sender"}[fe.Field]
		if flagName == "" {
			flagName = fe.Field
		}
		if fe.Field == "id" {
			return usagef("%s: ID: %v", cmd, fe.Err)
		}
		return usagef("%s: --%s: %v", cmd, flagName, fe.Err)
	case errors.Is(err, policy.ErrRuleFromConfig):
		return exitError{exitFail, cmd + ": " + err.Error()}
	case errors.Is(err, policy.ErrNotFound):
		return exitError{exitFail, cmd + ": " + err.Error()}
	}
	return err
}

func rulesAdd(e *env, args []string) error {
	fs := flag.NewFlagSet("policy rules add", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	f := newRuleFlags(fs, true)
	if err := parseNoArgs(fs, "rules add", args); err != nil {
		return err
	}
	where, err := policy.ParsePosition(*f.position)
	if err != nil {
		return ruleError("rules add", err)
	}
	if policy.Action(*f.action) == policy.ActionApprove {
		if err := policyStepUp(e, *cfgPath, "rules add"); err != nil {
			return err
		}
	}
	return withRules(e, *cfgPath, func(rules *policy.RuleStore) error {
		ri, err := rules.Add(e.ctx, policy.NewRule{Capability: *f.capability, Target: *f.target,
			Action: policy.Action(*f.action), SenderID: *f.sender, Agent: *f.agent, Channel: *f.channel, Position: where},
			cliActor(e))
		if err != nil {
			return ruleError("rules add", err)
		}
		if cfg, err := loadDBConfig(e, *cfgPath); err == nil {
			warnNotLifted(e, "rule "+ri.ID, cfg.RuleGuards(ri.Rule()))
		}
		return printJSONLine(e.stdout, ri)
	})
}

func rulesUpdate(e *env, args []string) error {
	fs := flag.NewFlagSet("policy rules update", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	newRuleFlags(fs, false) // read back through fs.Visit: only the flags given change the rule
	pos, err := parseFlags(fs, args)
	if len(pos) > 1 || len(pos) == 0 && err == nil { // none: a parse error or --help, answered below
		return usagef("rules update: want one rule ID, got %d argument(s)", len(pos))
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	var p policy.RulePatch
	var bad error
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "target":
			p.Target = &v
		case "action":
			a := policy.Action(v)
			p.Action = &a
		case "sender":
			p.SenderID = &v
		case "agent":
			p.Agent = &v
		case "channel":
			p.Channel = &v
		case "position":
			where, err := policy.ParsePosition(v)
			if err != nil {
				bad = err
			}
			p.Position = &where
		}
	})
	if bad != nil {
		return ruleError("rules update", bad)
	}
	if p.Action != nil && *p.Action == policy.ActionApprove {
		if err := policyStepUp(e, *cfgPath, "rules update"); err != nil {
			return err
		}
	}
	return withRules(e, *cfgPath, func(rules *policy.RuleStore) error {
		ri, err := rules.Update(e.ctx, pos[0], p, cliActor(e))
		if err != nil {
			return ruleError("rules update", err)
		}
		if cfg, err := loadDBConfig(e, *cfgPath); err == nil {
			warnNotLifted(e, "rule "+ri.ID, cfg.RuleGuards(ri.Rule()))
		}
		return printJSONLine(e.stdout, ri)
	})
}

func rulesRemove(e *env, args []string) error {
	fs := flag.NewFlagSet("policy rules rm", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	pos, err := parseFlags(fs, args)
	if len(pos) > 1 || len(pos) == 0 && err == nil { // none: a parse error or --help, answered below
		return usagef("rules rm: want one rule ID, got %d argument(s)", len(pos))
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	return withRules(e, *cfgPath, func(rules *policy.RuleStore) error {
		if err := rules.Remove(e.ctx, pos[0], cliActor(e)); err != nil {
			return ruleError("rules rm", err)
		}
		return printJSONLine(e.stdout, map[string]any{"removed": true, "id": pos[0]})
	})
}
