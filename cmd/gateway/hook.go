package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/metnos/gateway/client"
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
	wait := fs.Duration("wait", 0, "how long to wait for a person before answering ask (default hooks.claude_code.wait, 9m)")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "claude-code" {
		return usagef("want `gateway hook claude-code` (the only adapter)")
	}
	if *wait < 0 {
		return usagef("--wait: negative duration %s", *wait)
	}
	out, problem := claudeCode(e, *cfgPath, *urlFlag, *tokenFlag, *wait)
	if problem != nil {
		// stderr is shown in Claude Code's verbose mode; the reason also
		// reaches the person through the ask prompt.
		fmt.Fprintf(e.stderr, "gateway hook: %s\n", oneLine(problem.Error()))
	}
	return printJSONLine(e.stdout, out)
}

// claudeCode decides one PreToolUse event. problem is set when the
// gateway was not consulted or failed, for stderr.
func claudeCode(e *env, cfgPath, urlFlag, tokenFlag string, wait time.Duration) (out hooks.Output, problem error) {
	ev, err := hooks.Decode(e.stdin)
	if err != nil {
		return hooks.Failed(err), err
	}
	cfg, err := loadConfig(e, cfgPath)
	if err != nil {
		return hooks.Failed(err), err
	}
	cc := cfg.Hooks.ClaudeCode
	if wait == 0 {
		wait = cc.Wait
	}
	call, err := hooks.Map(ev, cc.Tools)
	if err != nil {
		return hooks.Unmapped(err, cc.UnknownTool), nil
	}
	c, err := agentClient(e, urlFlag, tokenFlag, "http://"+cfg.Server.Listen)
	if err != nil {
		return hooks.Failed(err), err
	}
	r, err := c.Request(e.ctx, client.Req{
		CallID: call.CallID, Capability: call.Capability, Target: call.Target, Intent: call.Intent,
		Executor: call.Executor, Summary: call.Summary, Args: call.Args, Timeout: wait,
	}, wait)
	if err != nil && r.ID == "" {
		return hooks.Failed(err), err
	}
	if err == nil && r.Finished() {
		return hooks.Decide(hookResult(r)), nil
	}
	// No answer in time, the gateway lost mid-wait, or we were stopped:
	// withdraw the request so the phone stops asking; the prompt decides.
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	got, cerr := c.Cancel(ctx, r.ID)
	var ae *client.APIError
	if errors.As(cerr, &ae) && ae.Request != nil {
		return hooks.Decide(hookResult(*ae.Request)), nil // decided in the last instant
	}
	if err != nil {
		return hooks.Failed(fmt.Errorf("waiting for request %s: %w", r.ID, err)), err
	}
	if cerr == nil {
		r = got
	}
	return hooks.NoAnswer(r.ID, wait, cerr == nil), nil
}

// hookResult is what hooks.Decide needs of a request.
func hookResult(r client.Request) hooks.Result {
	return hooks.Result{ID: r.ID, Status: string(r.Status), Decision: r.Decision, DecidedBy: r.DecidedBy,
		Reason: r.Reason, BlockedBy: r.BlockedBy, Note: r.Note}
}
