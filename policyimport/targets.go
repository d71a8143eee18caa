package policyimport

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/metnos/gateway/policy"
)

// The kinds of tool an agent's entry names, by the capability the
// gateway asks about for it (hooks maps the same tools the same way).
const (
	toolExec  = "code:exec"
	toolRead  = "fs:read"
	toolWrite = "fs:write"
	toolFetch = "network:http"
)

// splitEntry reads "Tool" or "Tool(spec)".
func splitEntry(s string) (tool, spec string, hasSpec bool, err error) {
	s = strings.TrimSpace(s)
	i := strings.IndexByte(s, '(')
	if i < 0 {
		return s, "", false, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", "", false, errors.New("an opening parenthesis without its closing one")
	}
	return strings.TrimSpace(s[:i]), s[i+1 : len(s)-1], true, nil
}

// prefixTargets are the targets of a command prefix: the command alone
// and the command with more words. A prefix is matched on whole words,
// so "npm test" does not cover "npm testx".
func prefixTargets(prefix string) ([]string, error) {
	prefix = strings.TrimSpace(prefix)
	switch {
	case prefix == "":
		return nil, errors.New("an empty command")
	case strings.ContainsAny(prefix, "*?"):
		return nil, fmt.Errorf("a wildcard inside the command prefix %q, which the gateway's patterns would read differently", prefix)
	}
	return []string{prefix, prefix + " *"}, nil
}

// claudeCommand reads a Claude Code (or Qwen Code) Bash specifier:
// "npm test" exactly, "npm run:*" (a prefix), "git log *" (a trailing
// wildcard that also matches "git log" alone), "* --help" (a wildcard
// anywhere), or none (any command).
func claudeCommand(spec string, hasSpec bool) ([]string, error) {
	switch {
	case !hasSpec || spec == "*":
		return []string{"*"}, nil
	case strings.HasSuffix(spec, ":*"):
		return prefixTargets(strings.TrimSuffix(spec, ":*"))
	case strings.Contains(spec, "?"):
		return nil, fmt.Errorf("a literal ? in %q, which the gateway's patterns read as any one character", spec)
	case strings.HasSuffix(spec, " *") && strings.Count(spec, "*") == 1:
		return prefixTargets(strings.TrimSuffix(spec, " *"))
	}
	return []string{spec}, nil
}

// pathTarget turns a path pattern as an agent writes it into an absolute
// pattern: "//abs" and "/abs" in Claude Code's sense (absolute, and
// relative to the project root), "~/x", and a relative pattern under the
// project root (one with no slash matches at any depth, as gitignore
// does). root is "" for a user-level file, where a relative pattern has
// no fixed base: such an entry is listed, not guessed at.
func pathTarget(spec, root string, slashIsRoot bool) (string, error) {
	spec = strings.TrimSpace(spec)
	noRoot := fmt.Errorf("the path %q is relative to the project, which a user-level file does not name; write the rule on the absolute path", spec)
	switch {
	case spec == "":
		return "", errors.New("an empty path")
	case strings.HasPrefix(spec, "//"):
		return "/" + strings.TrimLeft(spec, "/"), nil
	case spec == "~" || strings.HasPrefix(spec, "~/"):
		return spec, nil
	case strings.HasPrefix(spec, "$HOME/"):
		return "~/" + strings.TrimPrefix(spec, "$HOME/"), nil
	case strings.HasPrefix(spec, "/") && !slashIsRoot:
		return spec, nil
	case root == "":
		return "", noRoot
	case strings.HasPrefix(spec, "/"):
		return filepath.Join(root, spec), nil
	case spec == "*" || spec == "**":
		return root + "/**", nil
	case !strings.Contains(spec, "/"):
		return root + "/**/" + spec, nil
	}
	return filepath.Join(root, spec), nil
}

// anyPath is the target of a file tool named without a path: the agent
// limits it to its workspace, the project root. A user-level file names
// none: a block or an ask there covers every path, an approve is listed.
func anyPath(root string, action policy.Action) ([]string, error) {
	switch {
	case root != "":
		return []string{root + "/**"}, nil
	case action != policy.ActionApprove:
		return []string{"*"}, nil
	}
	return nil, errors.New("approves the tool in whatever directory the agent runs in, which this file, not a project's, does not name; write the rule on the project's path")
}

// hostTarget is the host of a URL, a "domain:HOST" or a bare host.
func hostTarget(s string) (string, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "domain:"))
	if s == "" || s == "*" {
		return "*", nil
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return "", fmt.Errorf("%q is not a URL with a host", s)
		}
		return u.Hostname(), nil
	}
	h, _, _ := strings.Cut(s, "/")
	if h == "" {
		return "", fmt.Errorf("%q names no host", s)
	}
	return h, nil
}
