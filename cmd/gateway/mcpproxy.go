package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/mcpproxy"
)

// cmdMCPProxy is `gateway mcp-proxy [--name NAME] -- COMMAND ARGS…`: the
// MCP proxy (package mcpproxy) on an agent's machine, over stdio. It runs
// the MCP server given after --, takes the tool map of [[mcp.servers]]
// NAME from the gateway at GATEWAY_URL (as the agent of GATEWAY_TOKEN;
// nothing else is needed on this machine), and stands between the server
// and the MCP client that started it: tools/list leaves out what policy
// denies the agent, every tools/call is asked about first. The gateway
// unreachable at start, or NAME not configured, is an error: no server is
// offered unguarded.
func cmdMCPProxy(e *env, args []string) error {
	flags, command := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		flags, command = args[:i], args[i+1:]
	}
	fs := flag.NewFlagSet("mcp-proxy", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	name := fs.String("name", "", "the [[mcp.servers]] entry whose tool map applies (default: the command's file name)")
	includeBlocked := fs.Bool("include-blocked", false, "list the tools policy denies too (their calls are still refused)")
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN)")
	pos, err := parseFlags(fs, flags)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q: the server's command goes after -- (gateway mcp-proxy --name fs -- CMD ARGS…)", pos[0])
	}
	if len(command) == 0 || command[0] == "" {
		return usagef("no server to run: gateway mcp-proxy --name NAME -- COMMAND ARGS…")
	}
	if *name == "" {
		*name = filepath.Base(command[0])
	}
	c, err := agentClientOrConfig(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	var m mcpproxy.Map
	if err := c.MCPServer(e.ctx, *name, &m); err != nil {
		return fmt.Errorf("the tool map of %q from the gateway: %w", *name, err)
	}
	up := mcpproxy.Server{Command: command, Env: serverEnv(os.Environ()), Stderr: e.stderr, Version: buildVersion()}
	cs, err := up.Connect(e.ctx)
	if err != nil {
		return fmt.Errorf("starting the MCP server %s: %w", command[0], err)
	}
	defer cs.Close()
	home := serverHome()
	s := mcpproxy.New(mcpproxy.Options{
		Map:            m,
		Upstream:       func(context.Context) (*mcp.ClientSession, error) { return cs, nil },
		Backend:        func(context.Context, mcp.Request) (mcpproxy.Backend, error) { return c, nil },
		IncludeBlocked: *includeBlocked,
		Home:           home,
		Version:        buildVersion(),
	})
	// The client hanging up, or the server exiting, ends the proxy.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go func() { _ = cs.Wait(); cancel() }()
	t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopCloser{e.stdout}}
	err = s.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// serverHome is the directory "~" stands for in the server's path
// arguments: $HOME, else the user's home from the password database, as
// Node's os.homedir() reads it ("" leaves "~" to the gateway's policy).
func serverHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// serverEnv is the proxy's environment without the agent's gateway
// token: the server it runs has no business with it.
func serverEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "GATEWAY_TOKEN=")
	})
}
