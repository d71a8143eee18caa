package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

var osGetenv = os.Getenv

// Load reads the configuration: defaults, then the TOML file at path, then the
// environment (overrides and the secrets named by *_env keys), then Validate.
// With explicit set (a --config flag or $GATEWAY_CONFIG) the file must exist;
// otherwise a missing file means defaults. A nil getenv means os.Getenv.
//
// Every problem found is returned in one *Error; on error the Config is zero.
func Load(path string, explicit bool, getenv func(string) string) (Config, error) {
	return LoadWith(path, explicit, getenv, LoadOptions{})
}

// LoadOptions relaxes Load for commands that never serve nor authenticate agents.
type LoadOptions struct {
	// SkipAgentTokens leaves every agents[].token_env unresolved: Agent.Token
	// stays empty and an unset variable is no error (the name must still be a
	// valid variable name). For the database-only commands (policy, audit,
	// prune, migrate), which an admin may run without the agents' secrets.
	// Never for serve or config check.
	SkipAgentTokens bool
	// SkipSecrets goes further: no secret a *_env key names is read (the
	// agents' tokens, the messengers', the web admin token, webhook
	// secrets, the LLM judge's key), and an unset one is no error. For the
	// commands that only open the database or find the server (policy,
	// audit, prune, migrate, login, logout; ask, hook and mcp without
	// GATEWAY_URL), which an admin or an agent runs without the server's
	// secrets. The database's DSN is still read. Never for serve or
	// config check.
	SkipSecrets bool
	// Sections are the top-level tables other packages own, each decoded,
	// resolved and checked by its own Section (see Section).
	Sections []SectionSpec
}

// LoadWith is Load with options; LoadWith(…, LoadOptions{}) is Load.
func LoadWith(path string, explicit bool, getenv func(string) string, opt LoadOptions) (Config, error) {
	getenv = orEnv(getenv)
	cfg := defaults(getenv)
	if err := cfg.AddSections(opt.Sections...); err != nil {
		return Config{}, err
	}
	var p problems
	file := ""
	if explicit && path == "" {
		return Config{}, errors.New("config file: empty path")
	}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			file = path
			if err := decode(&cfg, data, filepath.Dir(path), getenv, &p); err != nil {
				return Config{}, &Error{File: file, Problems: append(p, err)}
			}
		case errors.Is(err, fs.ErrNotExist) && !explicit:
			// No file at the default place: run on defaults.
		case errors.Is(err, fs.ErrNotExist):
			return Config{}, fmt.Errorf("config file %s: %w", path, fs.ErrNotExist)
		default:
			return Config{}, fmt.Errorf("read config file: %w", err)
		}
	}
	if opt.SkipSecrets {
		opt.SkipAgentTokens = true
	}
	applyEnv(&cfg, getenv, opt, &p)
	cfg.validate(&p, opt)
	if opt.SkipSecrets {
		p = slices.DeleteFunc(p, func(err error) bool { return errors.Is(err, errSecretUnset) })
	}
	if len(p) > 0 {
		return Config{}, &Error{File: file, Problems: p}
	}
	if path != "" {
		cfg.File, _ = filepath.Abs(path)
	}
	return cfg, nil
}

// filePath expands ~ and reads a relative path from the config file's
// directory, so the file means the same whatever directory the gateway starts in.
func filePath(p, dir string, getenv func(string) string) string {
	p = ExpandHome(p, getenv)
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return p
	}
	return filepath.Join(dir, p)
}
