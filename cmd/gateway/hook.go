package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/telemetry"
)

// cmdHook is `gateway hook NAME` (claude-code, codex, gemini, cursor,
// copilot, …: hooks.Adapters): an agent's
// hook (SPEC §9), one pipeline for all (agentHook). It reads the event on
// stdin and prints the answer JSON on stdout, and exits 0 whatever
// happened, because the agents read the JSON only on exit 0: an
// unreachable gateway, a bad event, a bad config or no answer in time all
// answer the adapter's fail-safe (Claude Code: "ask", so the local prompt
// takes over), and nothing is ever silently allowed. Only a mistyped
// command line (a setup error, not a hook run) exits 2, which Claude Code
// shows as a blocking error.
func cmdHook(e *env, args []string) error {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	wait := durationFlag(fs, "wait", 0, "wait at most this long for a person before answering ask (default: the gateway's [hooks.NAME] wait)")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN)")
	noAsk := fs.Bool("no-ask", false, "gemini, cursor: deny instead of answering ask (for a headless agent nobody can prompt)")
	plugin := fs.Bool("plugin", false, "opencode: print the OpenCode plugin file (save it and name it in opencode.json) and exit")
	printConfig := fs.Bool("print-config", false, "print the agent's own settings that make the gateway the only place that asks, to merge into its file, and exit")
	pos, err := parseFlags(fs, args)
	ad, isAdapter := hooks.AdapterNamed(strings.Join(pos, " "))
	known := len(pos) == 1 && isAdapter
	if !known && (len(pos) > 0 || err == nil) { // none: a parse error or --help, answered below
		return usagef("want `gateway hook %s`", hookNames())
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	if *printConfig {
		return printAgentConfig(e, ad)
	}
	if *plugin {
		if ad.Name != hooks.OpenCode.Name {
			return usagef("--plugin: only `gateway hook opencode` has a plugin")
		}
		_, err := e.stdout.Write(hooks.OpenCodePlugin)
		return err
	}
	if *wait < 0 {
		return usagef("--wait: negative duration %s", *wait)
	}
	return agentHook(e, ad, *cfgPath, *urlFlag, *tokenFlag, *wait, *noAsk)
}

// printAgentConfig is `gateway hook NAME --print-config`: the agent's
// settings on stdout, where to merge them on stderr.
func printAgentConfig(e *env, ad hooks.Adapter) error {
	c, ok := hooks.ConfigFor(ad.Name, e.getenv("HOME"))
	if !ok {
		return exitError{exitFail, "--print-config: no settings for " + ad.Label}
	}
	fmt.Fprintf(e.stderr, "gateway hook %s: merge this into %s\n", ad.Name, c.Where)
	if ad.Name == hooks.OpenCode.Name {
		fmt.Fprintf(e.stderr, "gateway hook %s: and save the plugin it names: gateway hook opencode --plugin > ~/.local/share/gateway/opencode-plugin.js\n", ad.Name)
	}
	_, err := fmt.Fprint(e.stdout, c.Text)
	return err
}

// hookNames are the agents `gateway hook` serves, as "a|b|c".
func hookNames() string {
	var names []string
	for _, ad := range hooks.Adapters() {
		names = append(names, ad.Name)
	}
	return strings.Join(names, "|")
}

// hookMargin is how much longer than the wait the hook gives the gateway
// to answer.
const hookMargin = 10 * time.Second

// askHook hands an agent's hook event to the gateway's POST
// /v1/hooks/name. The server answers by its wait (at most
// gateway.HookMaxWait); the margin covers the network, and no answer by
// then is client.ErrUnreachable.
func askHook(e *env, c *client.Client, name string, event []byte, wait time.Duration) ([]byte, error) {
	limit := gateway.HookMaxWait
	if wait > 0 {
		limit = min(wait, limit)
	}
	ctx, cancel := context.WithTimeout(e.ctx, limit+e.hookMargin)
	defer cancel()
	c.Traceparent, c.Tracestate = agentTrace(e.getenv)
	body, err := c.Hook(ctx, name, event, wait)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && e.ctx.Err() == nil {
		err = fmt.Errorf("%w: no answer within %s", client.ErrUnreachable, limit+e.hookMargin)
	}
	return body, err
}

// agentTrace is the trace the agent handed its hook, if it gave one:
// TRACEPARENT and TRACESTATE, OpenTelemetry's carriers for a trace passed
// to a child process. A malformed traceparent is not passed on (the
// gateway starts a trace of its own); a tracestate only beside a valid
// traceparent, and only as one line of printable ASCII of at most 512
// bytes, as the W3C header allows.
func agentTrace(getenv func(string) string) (traceparent, tracestate string) {
	traceparent = strings.TrimSpace(getenv("TRACEPARENT"))
	if !telemetry.Valid(traceparent) {
		return "", ""
	}
	tracestate = strings.TrimSpace(getenv("TRACESTATE"))
	if len(tracestate) > 512 || strings.ContainsFunc(tracestate, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		tracestate = ""
	}
	return traceparent, tracestate
}
