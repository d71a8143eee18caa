package policyimport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/metnos/gateway/policy"
)

// Copilot reads Copilot CLI's permissions: its settings.json (the user's
// in $COPILOT_HOME, and the repository's .github/copilot/settings.json and
// settings.local.json), as `copilot config` writes them: allowedUrls and
// deniedUrls (trustedFolders and defaultPermissionMode are listed); the
// same of the older config.json (allowed_urls, denied_urls,
// trusted_folders); and, from any other file
// (a shell alias, a wrapper script), the options of each `copilot`
// command line: --allow-tool and --deny-tool (comma-separated "shell",
// "shell(git push)", "shell(git:*)", "write", "url(host)"), --allow-url,
// --deny-url, and --allow-all-tools, --allow-all and --yolo, which
// approve every command. A deny wins over an allow.
var Copilot = Format{
	Name: "copilot", Label: "Copilot CLI",
	Defaults: func(e Env) []string {
		home := e.getenv("COPILOT_HOME")
		if home == "" {
			home = filepath.Join(e.Home, ".copilot")
		}
		return []string{filepath.Join(home, "settings.json"), filepath.Join(home, "config.json"),
			filepath.Join(e.Cwd, ".github", "copilot", "settings.json"), filepath.Join(e.Cwd, ".github", "copilot", "settings.local.json")}
	},
	Parse: func(_ Env, path string, data []byte) (Result, error) {
		if strings.HasSuffix(path, ".json") {
			return copilotConfig(path, data)
		}
		return copilotCommands(path, data)
	},
}

func copilotConfig(path string, data []byte) (Result, error) {
	s := &sink{path: path}
	err := walkJSON(data, func(p []string, v any, line int) {
		if len(p) == 1 && p[0] == "defaultPermissionMode" {
			s.skip(line, p[0]+" = "+fmt.Sprint(v), "a setting of the agent, not a rule: the gateway decides by its own policy and the agent's level")
		}
		if len(p) != 2 {
			return
		}
		entry, _ := v.(string)
		switch p[0] {
		case "allowed_urls", "allowedUrls":
			copilotURL(s, line, p[0]+": "+entry, entry, policy.ActionApprove)
		case "denied_urls", "deniedUrls":
			copilotURL(s, line, p[0]+": "+entry, entry, policy.ActionBlock)
		case "trusted_folders", "trustedFolders":
			s.skip(line, p[0]+": "+entry, "a folder the agent trusts, not a permission")
		}
	})
	return s.res, err
}

// copilotURL turns an allowed or denied URL into a rule on its host. The
// gateway's network:http targets are hosts: a denied URL with a path
// blocks its whole host (stricter), an allowed one is listed rather than
// widened to the host.
func copilotURL(s *sink, line int, entry, u string, action policy.Action) {
	h, err := hostTarget(u)
	if err == nil && action == policy.ActionApprove && urlHasPath(u) {
		err = fmt.Errorf("allows one path of %s; the gateway's network:http rules name hosts, and allowing the whole host would allow more", h)
	}
	s.rules(line, entry, toolFetch, action, []string{h}, err)
}

// urlHasPath says whether u names more than a host: a path other than /,
// a query.
func urlHasPath(u string) bool {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	_, rest, ok := strings.Cut(u, "/")
	return ok && rest != "" || strings.Contains(u, "?")
}

// copilotCommands reads the options of every `copilot` command in a
// shell file.
func copilotCommands(path string, data []byte) (Result, error) {
	s := &sink{path: path}
	f, err := syntax.NewParser().Parse(bytes.NewReader(data), path)
	if err != nil {
		return Result{}, fmt.Errorf("not a shell file: %v", err)
	}

	syntax.Walk(f, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok || len(ce.Args) == 0 {
			return true
		}
		line := int(ce.Pos().Line())
		words := make([]string, len(ce.Args))
		for i, w := range ce.Args {
			lit, err := expand.Literal(nil, w)
			if err != nil {
				lit = "" // a word only the shell can read: listed below if it is an option's
			}
			words[i] = lit
		}
		for len(words) > 1 && (words[0] == "exec" || words[0] == "command") {
			words = words[1:]
		}
		switch filepath.Base(words[0]) {
		case "copilot":
			copilotOptions(s, line, words[1:])
		case "alias":
			for _, a := range words[1:] {
				if _, def, ok := strings.Cut(a, "="); ok {
					if r, err := copilotCommands(path, []byte(def)); err == nil {
						for _, x := range r.Rules {
							x.Source = s.src(line)
							s.res.Rules = append(s.res.Rules, x)
						}
						for _, x := range r.Skipped {
							x.Source = s.src(line)
							s.res.Skipped = append(s.res.Skipped, x)
						}
					}
				}
			}
		}
		return true
	})
	return s.res, nil
}

func copilotOptions(s *sink, line int, args []string) {
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		takes := map[string]bool{"--allow-tool": true, "--deny-tool": true, "--allow-url": true, "--deny-url": true}
		if takes[name] && !hasVal && i+1 < len(args) {
			if args[i+1] == "" {
				s.skip(line, name, "its value is made by the shell when it runs (a variable, a substitution): the import reads only what is written out")
				i++
				continue
			}
			val, hasVal = args[i+1], true
			i++
		}
		switch name {
		case "--allow-all-tools", "--allow-all", "--yolo":
			s.rules(line, name, toolExec, policy.ActionApprove, []string{"*"}, nil)
		case "--allow-tool", "--deny-tool":
			action := policy.ActionApprove
			if name == "--deny-tool" {
				action = policy.ActionBlock
			}
			for _, tool := range splitTools(val) {
				copilotTool(s, line, name+" '"+tool+"'", tool, action)
			}
		case "--allow-url", "--deny-url":
			action := policy.ActionApprove
			if name == "--deny-url" {
				action = policy.ActionBlock
			}
			for _, u := range strings.Split(val, ",") {
				copilotURL(s, line, name+" "+u, u, action)
			}
		case "--add-dir", "--allow-all-paths", "--allow-all-urls", "--available-tools", "--excluded-tools":
			s.skip(line, args[i], "not a per-call permission the gateway has a rule for")
		}
	}
}

// splitTools splits a comma-separated tool list, keeping commas inside
// parentheses.
func splitTools(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// copilotTool turns one tool pattern.
func copilotTool(s *sink, line int, entry, tool string, action policy.Action) {
	name, spec, hasSpec, err := splitEntry(tool)
	if err != nil {
		s.skip(line, entry, "%v", err)
		return
	}
	var targets []string
	capability := toolExec
	switch {
	case name == "shell" && !hasSpec:
		targets = []string{"*"}
	case name == "shell":
		targets, err = prefixTargets(strings.TrimSuffix(spec, ":*"))
	case name == "write" && !hasSpec:
		capability = toolWrite
		targets, err = anyPath("", action)
	case name == "url":
		capability = toolFetch
		var h string
		h, err = hostTarget(spec)
		targets = []string{h}
	default:
		s.skip(line, entry, "%s is an MCP server's tool or one the gateway has no built-in capability for: map it in [hooks.copilot.tools] and write the rule on that capability", name)
		return
	}
	s.rules(line, entry, capability, action, targets, err)
}
