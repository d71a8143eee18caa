package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/mcpserver"
)

// cmdMCP is `gateway mcp`: the gateway's MCP tools (approval_prompt,
// request_approval, check) over stdio, for an agent that starts MCP
// servers as commands (Claude Code's .mcp.json or --mcp-config). It asks
// the gateway at GATEWAY_URL as the agent of GATEWAY_TOKEN, like `gateway
// ask`; the same tools are served by the gateway itself at /mcp.
func cmdMCP(e *env, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	urlFlag := fs.String("url", "", "gateway URL (default $GATEWAY_URL, else http:// + server.listen)")
	tokenFlag := fs.String("token", "", "agent token (default $GATEWAY_TOKEN)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q (want `gateway mcp`)", pos[0])
	}
	c, err := agentClientOrConfig(e, *cfgPath, *urlFlag, *tokenFlag)
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	s := mcpserver.New(mcpserver.Options{
		Backend: func(context.Context, *mcp.CallToolRequest) (mcpserver.Backend, error) { return c, nil },
		Cwd:     cwd,
		Local:   true, // started by the agent, on its machine
		Home:    e.getenv("HOME"),
		Version: buildVersion(),
	})
	t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopCloser{e.stdout}}
	err = s.Run(e.ctx, t)
	if err == nil || errors.Is(err, io.EOF) || e.ctx.Err() != nil {
		return nil // the client closed stdin, or we were stopped
	}
	return err
}

// agentClientOrConfig is agentClient whose URL, when neither --url nor
// GATEWAY_URL gives one, is the config's server.listen.
func agentClientOrConfig(e *env, cfgPath, urlFlag, tokenFlag string) (*client.Client, error) {
	fallback := ""
	if e.getenv("GATEWAY_URL") == "" && urlFlag == "" {
		cfg, err := loadDBConfig(e, cfgPath)
		if err != nil {
			return nil, err
		}
		fallback = "http://" + cfg.Server.Listen
	}
	return agentClient(e, urlFlag, tokenFlag, fallback)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
