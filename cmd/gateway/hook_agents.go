package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/hooks"
)

// agentHook is `gateway hook NAME`: it hands the agent's
// hook event, as the agent wrote it, to the gateway's POST
// /v1/hooks/NAME, which maps it with the server's own [hooks.NAME]
// settings and waits by its own wait, and prints the answer the agent
// reads, exiting 0. A local config file's wait (when it sets one) and
// --wait may only shorten that wait. When the gateway cannot be asked (a
// bad event, unreachable, a bad token, no answer in time) the answer is
// the adapter's fail-safe one, made here: the agent's own prompt, or a
// block where the agent has none (Codex's PreToolUse, Cursor's
// beforeReadFile), never an allow. With --no-ask every ask is a deny, for
// an agent run where nobody can answer its prompt.
func agentHook(e *env, ad hooks.Adapter, cfgPath, urlFlag, tokenFlag string, wait time.Duration, noAsk bool) error {
	reply, problem := agentHookReply(e, ad, cfgPath, urlFlag, tokenFlag, wait)
	if noAsk {
		reply = ad.NoAsk(reply)
	}
	if problem != nil {
		fmt.Fprintf(e.stderr, "gateway hook %s: %s\n", ad.Name, oneLine(problem.Error()))
	}
	if _, err := e.stdout.Write(append(reply, '\n')); err != nil {
		return err
	}
	return nil
}

func agentHookReply(e *env, ad hooks.Adapter, cfgPath, urlFlag, tokenFlag string, wait time.Duration) (reply []byte, problem error) {
	var ev hooks.Event
	failed := func(err error) ([]byte, error) {
		return ad.Answer(ev, hooks.VerdictOf(hooks.Failed(err))).JSON(), err
	}
	raw, err := io.ReadAll(io.LimitReader(e.stdin, hooks.MaxEventBytes+1))
	if err != nil {
		return failed(fmt.Errorf("%w: read: %v", hooks.ErrBadEvent, err))
	}
	if ev, err = ad.Decode(raw); err != nil {
		return failed(err)
	}
	// An agent's machine usually has no config file: then none is read.
	listen := config.Default().Server.Listen
	if path, explicit := config.Locate(cfgPath, e.getenv); explicit || fileExists(path) {
		cfg, err := loadDBConfig(e, cfgPath)
		if err != nil {
			return failed(err)
		}
		def := config.Default()
		if local := time.Duration(cfg.Hooks.Section(ad.Name).Wait); local != time.Duration(def.Hooks.Section(ad.Name).Wait) {
			if wait == 0 || local < wait {
				wait = local // a wait the local file sets
			}
		}
		listen = cfg.Server.Listen
	}
	c, err := agentClient(e, urlFlag, tokenFlag, "http://"+listen)
	if err != nil {
		return failed(err)
	}
	relay := raw
	if ad.Relay != nil {
		relay = ad.Relay(raw)
	}
	// Only here, on the agent's machine, are its home and its links known.
	relay = hooks.Localize(ad, ev, relay, e.getenv("HOME"))
	// Past the server's wait and a margin the hook answers by itself,
	// before the agent's own hook timeout turns a hung connection into a
	// failed hook.
	body, err := askHook(e, c, ad.Name, relay, wait)
	var conflict *client.CallIDConflictError
	if errors.As(err, &conflict) {
		// A tool call id that named an earlier, different call: the
		// server refused it (409) and so does the hook.
		return ad.Answer(ev, hooks.Verdict{Decision: hooks.Deny, Reason: "approval gateway: " + conflict.API.Message}).JSON(), err
	}
	if err != nil {
		return failed(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return failed(fmt.Errorf("the gateway answered something that is not a %s hook answer: %.200q", ad.Label, body))
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return failed(err)
	}
	return out, nil
}
