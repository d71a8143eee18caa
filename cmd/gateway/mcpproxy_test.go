package main

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestMCPProxy_Refuses: `gateway mcp-proxy` never offers a server it
// cannot guard: no command, a positional before --, no token, a gateway
// that does not answer or has no such entry all end before the server
// starts.
func TestMCPProxy_Refuses(t *testing.T) {
	g := startLive(t, nil)
	cases := []struct {
		env  func(string) string
		args []string
		code int
		want string
	}{
		{agentEnv(t, g.URL), []string{"mcp-proxy", "--name", "fs"}, exitUsage, "no server to run"},
		{agentEnv(t, g.URL), []string{"mcp-proxy", "fs", "--", "true"}, exitUsage, "unexpected argument"},
		{agentEnv(t, g.URL, "GATEWAY_TOKEN", ""), []string{"mcp-proxy", "--", "true"}, exitUsage, "GATEWAY_TOKEN is not set"},
		{agentEnv(t, "http://127.0.0.1:1"), []string{"mcp-proxy", "--name", "fs", "--", "true"}, exitFail, "the tool map of \"fs\""},
		{agentEnv(t, g.URL), []string{"mcp-proxy", "--name", "nope", "--", "true"}, exitFail, "unknown_mcp_server"},
	}
	for _, tc := range cases {
		r := runCLI(context.Background(), tc.env, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

func TestServerEnv_DropsTheGatewayToken(t *testing.T) {
	got := serverEnv([]string{"PATH=/bin", "GATEWAY_TOKEN=secret", "GATEWAY_URL=http://x", "HOME=/h"})
	if !slices.Equal(got, []string{"PATH=/bin", "GATEWAY_URL=http://x", "HOME=/h"}) {
		t.Errorf("server env %v", got)
	}
}
