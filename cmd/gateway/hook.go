package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/hooks"
)

// cmdHook is `gateway hook claude-code`: Claude Code's PreToolUse hook
// (SPEC §9). It reads the event on stdin and prints the decision JSON on
// stdout, and exits 0 whatever happened, because Claude Code reads the
// JSON only on exit 0: an unreachable gateway, a bad event, a bad config
// or no answer in time all print "ask", so the local prompt takes over and
// nothing is ever silently allowed. Only a mistyped command line (a setup
// error, not a hook run) exits 2, which Claude Code shows as a blocking
// error.
func cmdHook(e *env, args []string) error {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	wait := durationFlag(fs, "wait", 0, "wait at most this long for a person before answering ask (default: the gateway's hooks.claude_code.wait)")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN)")
	noAsk := fs.Bool("no-ask", false, "gemini, cursor: deny instead of answering ask (for a headless agent nobody can prompt)")
	pos, err := parseFlags(fs, args)
	ad, isAdapter := hooks.AdapterNamed(strings.Join(pos, " "))
	known := len(pos) == 1 && (isAdapter || pos[0] == "claude-code")
	if !known && (len(pos) > 0 || err == nil) { // none: a parse error or --help, answered below
		return usagef("want `gateway hook claude-code|codex|gemini|cursor`")
	}
	if err != nil {
		return err // --help, after the positionals are checked
	}
	if *wait < 0 {
		return usagef("--wait: negative duration %s", *wait)
	}
	if isAdapter {
		return agentHook(e, ad, *cfgPath, *urlFlag, *tokenFlag, *wait, *noAsk)
	}
	out, problem := claudeCode(e, *cfgPath, *urlFlag, *tokenFlag, *wait)
	if problem != nil {
		// stderr is shown in Claude Code's verbose mode; the reason also
		// reaches the person through the ask prompt.
		fmt.Fprintf(e.stderr, "gateway hook: %s\n", oneLine(problem.Error()))
	}
	return printJSONLine(e.stdout, out)
}

// claudeCode decides one PreToolUse event by handing it, as Claude Code
// wrote it, to the gateway's POST /v1/hooks/claude-code: the server maps
// it with its own [hooks.claude_code] tools and unknown_tool and waits by
// its own wait, so an agent's machine needs only GATEWAY_URL and
// GATEWAY_TOKEN. A local config file's wait (when set) and --wait may only
// shorten that wait. problem is set when the gateway was not consulted or
// failed, for stderr.
func claudeCode(e *env, cfgPath, urlFlag, tokenFlag string, wait time.Duration) (out hooks.Output, problem error) {
	raw, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxEventBytes+1))
	if err != nil {
		err = fmt.Errorf("%w: read: %v", hooks.ErrBadEvent, err)
		return hooks.Failed(err), err
	}
	if _, err := hooks.Decode(bytes.NewReader(raw)); err != nil {
		return hooks.Failed(err), err
	}
	// An agent's machine usually has no config file: then none is read
	// (not even for defaults, which need a HOME for their paths).
	listen := config.Default().Server.Listen
	if path, explicit := config.Locate(cfgPath, e.getenv); explicit || fileExists(path) {
		cfg, err := loadConfig(e, cfgPath)
		if err != nil {
			return hooks.Failed(err), err
		}
		if local := cfg.Hooks.ClaudeCode.Wait; wait == 0 && local != config.Default().Hooks.ClaudeCode.Wait {
			wait = local // a wait the local file sets
		}
		listen = cfg.Server.Listen
	}
	c, err := agentClient(e, urlFlag, tokenFlag, "http://"+listen)
	if err != nil {
		return hooks.Failed(err), err
	}
	// Past the server's wait and the margin the hook answers ask itself, so
	// Claude Code's 600 s hook timeout never turns a hung connection into
	// its non-blocking error (which goes on without asking).
	body, err := askHook(e, c, "claude-code", raw, wait)
	var conflict *client.CallIDConflictError
	if errors.As(err, &conflict) {
		// A tool_use_id that named an earlier, different call: the server
		// refused it (409) and so does the hook.
		return hooks.Answer(hooks.Deny, "approval gateway: "+conflict.API.Message), err
	}
	if err != nil {
		return hooks.Failed(err), err
	}
	if err := json.Unmarshal(body, &out); err != nil || !validAnswer(out) {
		err = fmt.Errorf("the gateway answered something that is not a PreToolUse decision: %.200q", body)
		return hooks.Failed(err), err
	}
	if out.NotConsulted() {
		problem = errors.New(out.Reason()) // the server could not ask either: say so on stderr
	}
	return out, problem
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
	ctx, cancel := context.WithTimeout(e.ctx, limit+hookMargin)
	defer cancel()
	body, err := c.Hook(ctx, name, event, wait)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && e.ctx.Err() == nil {
		err = fmt.Errorf("%w: no answer within %s", client.ErrUnreachable, limit+hookMargin)
	}
	return body, err
}

// validAnswer: only the three decisions Claude Code knows are relayed.
func validAnswer(o hooks.Output) bool {
	switch o.Decision() {
	case hooks.Allow, hooks.Deny, hooks.Ask:
		return o.HookSpecificOutput.HookEventName == hooks.EventName
	}
	return false
}
