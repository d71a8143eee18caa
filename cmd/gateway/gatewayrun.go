package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/sandbox"
	"github.com/metnos/gateway/vaglio"
)

// exitNoSandbox is gateway run's status when the kernel cannot sandbox.
const exitNoSandbox = 3

// kernelABI is the kernel's Landlock ABI (a variable: tests play a kernel
// without it).
var kernelABI = sandbox.KernelABI

// proxyVars are the variables that send a program's traffic to the egress
// proxy (curl, pip, npm, Node, Python and Go read one or more of them).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// runPlan is what gateway run enforces for one program.
type runPlan struct {
	argv       []string
	agent      *config.Agent
	url, token string
	home, dir  string
	tmp        string
	rules      sandbox.Rules
	network    bool
	env        []string
}

func cmdRunSandboxed(e *env, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file")
	agentID := fs.String("agent", "", "the [[agents]] entry whose run rules, workspace and token apply")
	var workspaces stringList
	fs.Var(&workspaces, "workspace", "a directory the program may write (repeatable; default the agent's workspace, else the current directory)")
	printOnly := fs.Bool("print", false, "print the effective rules and start nothing")
	unsandboxed := fs.Bool("unsandboxed", false, "on a kernel without Landlock, run the program without the kernel's sandbox (the hooks still ask)")
	abi := fs.Int("abi", 0, "use at most this Landlock ABI (to see what an older kernel enforces)")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN, else the agent's token_env, else the generated local token)")
	argv, err := parseRunArgs(fs, args)
	if err != nil {
		return err
	}
	if len(argv) == 0 && !*printOnly {
		return usagef("no program to run: gateway run [flags] -- COMMAND ARGS…")
	}
	cfg, err := loadConfig(e, *cfgPath)
	if err != nil {
		return err
	}
	p, err := planRun(e, cfg, *agentID, workspaces, *urlFlag, *tokenFlag, argv)
	if err != nil {
		return err
	}
	kernel := kernelABI()
	if *printOnly {
		printPlan(e, p, sandbox.EffectiveABI(*abi))
		return nil
	}
	if kernel < 1 {
		if !*unsandboxed {
			return exitError{exitNoSandbox, fmt.Sprintf("this kernel (Linux %s) has no Landlock, so nothing the program does can be held by it; "+
				"enable Landlock (CONFIG_SECURITY_LANDLOCK, landlock in lsm=) or pass --unsandboxed to run it with the hooks alone", kernelRelease())}
		}
		return runUnsandboxed(e, p)
	}
	return runInSandbox(e, cfg, p, *abi)
}

// parseRunArgs parses flags up to "--" or the first word that is not a
// flag; everything after is the program and its arguments, untouched.
func parseRunArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	i := slices.Index(args, "--")
	var rest []string
	if i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	return append(pos, rest...), nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// planRun works out the agent, its token and URL, its write roots and the
// sandbox's rules.
func planRun(e *env, cfg config.Config, agentID string, workspaces []string, urlFlag, tokenFlag string, argv []string) (*runPlan, error) {
	p := &runPlan{argv: argv, home: e.getenv("HOME"), network: true}
	if !filepath.IsAbs(p.home) || filepath.Clean(p.home) == "/" {
		return nil, usagef("HOME is %q: the forbidden paths under it (~/.ssh, …) need an absolute home directory", p.home)
	}
	p.home = filepath.Clean(p.home)
	if agentID != "" {
		i := slices.IndexFunc(cfg.Agents, func(a config.Agent) bool { return a.ID == agentID })
		if i < 0 {
			return nil, usagef("--agent %q: no such [[agents]] entry in the config", agentID)
		}
		p.agent = &cfg.Agents[i]
		p.network = p.agent.Run.NetworkOn()
	}
	p.url = firstNonEmpty(urlFlag, e.getenv("GATEWAY_URL"), "http://"+cfg.Server.Listen)
	if u, err := url.Parse(p.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("gateway URL %q is not an http(s) URL", p.url)
	}
	p.token = firstNonEmpty(tokenFlag, e.getenv("GATEWAY_TOKEN"))
	if p.token == "" && p.agent != nil {
		p.token = p.agent.Token
	}
	if p.token == "" && (cfg.Storage.Driver == "" || cfg.Storage.Driver == "sqlite") {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg.Storage.Path), config.TokenFileName)); err == nil {
			p.token = strings.TrimSpace(string(b))
		}
	}
	if p.token == "" {
		return nil, usagef("no agent token: set GATEWAY_TOKEN, pass --token, or --agent an agent whose token_env is set")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	p.dir = cwd
	if len(workspaces) == 0 && p.agent != nil {
		workspaces = p.agent.Workspace
	}
	if len(workspaces) == 0 {
		workspaces = []string{cwd}
	}
	var roots []string
	for _, w := range workspaces {
		w = config.ExpandHome(w, e.getenv)
		if !filepath.IsAbs(w) {
			w = filepath.Join(cwd, w)
		}
		roots = append(roots, filepath.Clean(w))
	}
	if len(argv) > 0 {
		paths, dirs := sandbox.AgentState(argv[0], p.home)
		for i, sp := range paths {
			if dirs[i] {
				if err := os.MkdirAll(sp, 0o700); err != nil {
					return nil, fmt.Errorf("the program's state directory: %w", err)
				}
			}
			if _, err := os.Stat(sp); err == nil {
				roots = append(roots, sp)
			}
		}
	}
	// The env file of the documented layouts sits beside the config
	// (/etc/metnos/gateway.env), outside the guard's own-path list.
	var readDeny []string
	if cfg.File != "" && filepath.IsAbs(cfg.File) {
		readDeny = append(readDeny, filepath.Join(filepath.Dir(cfg.File), "gateway.env"))
		if filepath.Base(filepath.Dir(cfg.File)) == "metnos" {
			readDeny = append(readDeny, filepath.Dir(cfg.File))
		}
	}
	if p.agent != nil {
		roots = append(roots, p.agent.Run.Write...)
		readDeny = append(readDeny, p.agent.Run.ReadDeny...)
	}
	pats, err := sandbox.Patterns(vaglio.ForbiddenPatterns(p.home, vaglio.Own{Paths: cfg.OwnPaths(e.getenv)}), readDeny)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if p.tmp, err = os.MkdirTemp("", "gateway-run-"); err != nil {
		return nil, err
	}
	roots = append(roots, p.tmp)
	if p.rules, err = sandbox.Build(pats, p.home, roots); err != nil {
		os.RemoveAll(p.tmp)
		return nil, usagef("%v", err)
	}
	p.env = childEnv(os.Environ(), cfg.Secrets(), p)
	return p, nil
}

// childEnv is the program's environment: the caller's, without the
// gateway's secrets (the chat tokens, the other agents' tokens) or
// earlier proxy settings, with the agent's token and a private TMPDIR. The
// proxy's and the API's URLs are added by the sandbox once known.
func childEnv(environ, secrets []string, p *runPlan) []string {
	drop := append(slices.Clone(proxyVars), "GATEWAY_URL", "GATEWAY_TOKEN", "NO_PROXY", "no_proxy", "TMPDIR", "GATEWAY_CONFIG", "HOME")
	var out []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(drop, k) || slices.Contains(secrets, v) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GATEWAY_TOKEN="+p.token, "TMPDIR="+p.tmp, "HOME="+p.home)
}

func printPlan(e *env, p *runPlan, abi int) {
	defer os.RemoveAll(p.tmp)
	fmt.Fprintf(e.stdout, "landlock: ABI %d (this kernel: %d): %s\n", abi, sandbox.KernelABI(), sandbox.Holds(abi))
	fmt.Fprintf(e.stdout, "read: everything but %d forbidden paths\n", len(p.rules.Denied))
	for _, d := range p.rules.Denied {
		fmt.Fprintf(e.stdout, "  deny %s (%s)\n", d.Path, d.Rule)
	}
	fmt.Fprintln(e.stdout, "write:")
	for _, r := range p.rules.WriteRoots {
		if r == p.tmp {
			r = "(a private TMPDIR made at start)"
		}
		fmt.Fprintf(e.stdout, "  %s\n", r)
	}
	fmt.Fprintf(e.stdout, "network: %s\n", networkLine(p.network, true))
	fmt.Fprintf(e.stdout, "gateway: %s (its API only)\n", p.url)
}

func networkLine(on, namespace bool) string {
	switch {
	case !namespace && on:
		return "through the egress proxy, held by Landlock's TCP port rules (weaker than a namespace: any host on the proxy's and the gateway's ports)"
	case !namespace:
		return "off, held by Landlock's TCP port rules (weaker than a namespace: any host on the gateway's port)"
	case on:
		return "through the egress proxy only (own network namespace)"
	}
	return "off (own network namespace; the gateway's API only)"
}

// runUnsandboxed runs the program with the hooks' environment and nothing
// held by the kernel, saying so.
func runUnsandboxed(e *env, p *runPlan) error {
	defer os.RemoveAll(p.tmp)
	fmt.Fprintf(e.stderr, "gateway run: UNSANDBOXED (this kernel, Linux %s, has no Landlock): only the hooks ask; nothing is enforced by the kernel\n", kernelRelease())
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(p.env, "GATEWAY_URL="+p.url)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err := cmd.Run()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		return exitError{code: xe.ExitCode()}
	}
	return err
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
