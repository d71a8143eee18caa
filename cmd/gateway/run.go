package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/metnos/gateway/cards"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

// Exit codes shared by every command.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and the answer is "no" (ask: denied/expired) or it failed
	exitUsage = 2 // bad arguments or configuration
)

// env is the process environment, injected so tests need not set real variables.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// hookMargin is how much longer than its wait `gateway hook` gives
	// the gateway to answer (hookMargin, the constant, in the program).
	hookMargin time.Duration
}

// usageError is a bad argument: exit 2 with one line naming it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit code with a message (or none).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

const usage = `gateway: an approval gateway for AI agents

Usage:
  gateway serve [--listen ADDR] [--log-format text|json] [--log-level debug|info|warn|error]
  gateway login [--user NAME]   (a one-time login link for the web page, the last line)
  gateway logout --all|--user NAME [--keep-passkeys]
                              (ends web sessions, and removes those users' passkeys unless --keep-passkeys)
  gateway passkeys list [--user NAME]
  gateway passkeys remove ID
  gateway policy registry|table
  gateway policy check LEVEL CAPABILITY [--channel C --sender S] [--target T] [--agent ID]
                       [--intent …] [--executor …] [--explain]
  gateway policy grants [--channel C] [--sender S] [--all]
  gateway policy grant --channel C --sender S --capability CAP --target T [--ttl 90d] [--agent ID]
  gateway policy revoke ID
  gateway policy rules [add|update ID|rm ID] [--capability C --target T --action A
                       --sender S --agent A --channel C --position top|bottom|N]
  gateway policy test [--config F] FILE
  gateway policy simulate [--since 7d] [--add-rule CAP:TARGET:ACTION]… [--remove-rule ID]… [--level AGENT=LEVEL]…
                       [--url URL] [--token TOKEN]
  gateway policy suggest [--since 7d] [--min 3] [--url URL] [--token TOKEN]
  gateway policy import --from claude-code|codex|gemini|qwen|copilot|opencode [FILE…] [--apply] [--simulate]
                       [--since 7d] [--url URL] [--token TOKEN]
                              (an agent's permission files as [[policy.rules]]; --apply adds them at run time)
  gateway prune [--dry-run]
  gateway audit [--since 24h|TIME] [--until …] [--agent ID] [--request ID] [--event NAME] [--actor …]
                [--capability CAP] [--after SEQ] [--limit N] [--format text|jsonl|csv] [--follow] [--cursor FILE]
  gateway audit verify [--expect SEQ:HASH]
  gateway audit show REQUEST_ID
  gateway ask --capability CAP [--target T] [--intent …] [--executor …] [--summary …] [--autonomy LEVEL]
              [--channel C --sender S] [--session ID] [--grant-target PATTERN] [--call-id ID] [--timeout 10m] [--wait 10m]
              [--json] [--url URL] [--token TOKEN]
  gateway ask --list [--include-blocked]
  gateway pending [--json] [--url URL] [--token TOKEN]
                              (what waits for a person, with ids; an admin agent's token)
  gateway decide ID allow_once|deny [--url URL] [--token TOKEN]
  gateway hook claude-code|codex|gemini|cursor|copilot|qwen|opencode [--wait 9m] [--no-ask] [--url URL] [--token TOKEN]
              [--plugin] [--print-config]
                              (the agent's hook event on stdin; opencode --plugin prints OpenCode's plugin file;
                              --print-config the agent's settings that leave the gateway the only place that asks)
  gateway mcp [--url URL] [--token TOKEN]
                              (MCP server on stdio: approval_prompt, request_approval, check)
  gateway mcp-proxy [--name NAME] [--include-blocked] [--url URL] [--token TOKEN] -- COMMAND ARGS…
                              (the MCP server COMMAND on stdio, each tool call asked about first)
  gateway run [--agent ID] [--workspace DIR]… [--print] [--unsandboxed] [--abi N] [--url URL] [--token TOKEN] -- COMMAND ARGS…
                              (COMMAND under the kernel's sandbox: Landlock, own network namespace, egress proxy)
  gateway config check|example
  gateway migrate
  gateway version

Every command takes --config FILE (env GATEWAY_CONFIG), and --help.
Durations are written as in the config file: 90s, 10m, 2160h or 90d.
`

type command func(e *env, args []string) error

func commands() map[string]command {
	return map[string]command{
		"version":   cmdVersion,
		"policy":    cmdPolicy,
		"serve":     cmdServe,
		"prune":     cmdPrune,
		"migrate":   cmdMigrate,
		"config":    cmdConfig,
		"ask":       cmdAsk,
		"pending":   cmdPending,
		"decide":    cmdDecide,
		"hook":      cmdHook,
		"audit":     cmdAudit,
		"mcp":       cmdMCP,
		"mcp-proxy": cmdMCPProxy,
		"login":     cmdLogin,
		"run":       cmdRunSandboxed,
		"logout":    cmdLogout,
		"passkeys":  cmdPasskeys,
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return (&env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, hookMargin: hookMargin}).run(args)
}

// run is the command args in e; its exit code.
func (e *env) run(args []string) int {
	args = hoistConfig(args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(e.stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "gateway: unknown command %q (see gateway help)\n", args[0])
		return exitUsage
	}
	err := cmd(e, args[1:])
	var ue usageError
	var xe exitError
	var he helpError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &he):
		fmt.Fprint(e.stdout, he.text())
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "gateway %s: %s\n", args[0], oneLine(ue.msg))
		return exitUsage
	case errors.As(err, &xe):
		if xe.msg != "" {
			fmt.Fprintf(e.stderr, "gateway %s: %s\n", args[0], oneLine(xe.msg))
		}
		return xe.code
	default:
		fmt.Fprintf(e.stderr, "gateway %s: %s\n", args[0], oneLine(err.Error()))
		return exitFail
	}
}

// hoistConfig moves a leading --config FILE (or --config=FILE), which
// every command takes, after the command name: `gateway --config f.toml
// policy rules` is `gateway policy rules --config f.toml`.
func hoistConfig(args []string) []string {
	var global []string
	for len(args) > 0 {
		switch a := args[0]; {
		case (a == "--config" || a == "-config") && len(args) > 1:
			global, args = append(global, args[:2]...), args[2:]
			continue
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config="):
			global, args = append(global, a), args[1:]
			continue
		}
		break
	}
	if len(global) == 0 || len(args) == 0 {
		return append(global, args...)
	}
	return append(append([]string{args[0]}, args[1:]...), global...)
}

// oneLine puts a message of several lines on one: each line break a "; ",
// but none after a colon that introduces the lines ("3 problems: a; b; c").
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			if prev := lines[i-1]; strings.HasSuffix(strings.TrimSpace(prev), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// parseFlags parses args with fs, letting flags stand before or after the
// positional arguments (the standard library stops at the first positional).
// On --help it returns a helpError with the positionals it has seen.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				// The positionals so far come back with it, so that a
				// command can refuse a wrong one before it answers --help.
				return pos, helpError{name: fs.Name(), flags: fs}
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
				return nil, usagef("unknown flag --%s", name) // was the bare name: "gateway serve: lisen"
			}
			return nil, usagef("%s", err.Error())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			if dirty {
				rev += "-dirty"
			}
			return "dev+" + rev
		}
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
	}
	return "dev"
}

func cmdVersion(e *env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "gateway %s\n", buildVersion())
	return nil
}

// printJSONLine writes v as one line of JSON.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", jsonVisible(b))
	return err
}

// jsonVisible rewrites every character a person could not see on a
// terminal (bidi controls, zero-width, other format and control
// characters: cards.Hidden) as a JSON \u escape. The JSON means the same;
// a person reading it sees "notes\u202e\u2066hs.txt", not reordered text.
func jsonVisible(b []byte) []byte {
	if utf8Printable(b) {
		return b
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && cards.Hidden(r) {
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&out, "\\u%04x\\u%04x", r1, r2)
			} else {
				fmt.Fprintf(&out, "\\u%04x", r)
			}
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

// utf8Printable reports whether b is printable ASCII, the common case.
func utf8Printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
