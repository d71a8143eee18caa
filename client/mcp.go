package client

import (
	"context"
	"net/http"
	"net/url"
)

// MCPServer reads the tool map of a [[mcp.servers]] entry (GET
// /v1/mcp/servers/NAME) into out: what `gateway mcp-proxy --name NAME`
// asks each tool call as. An unknown name is an *APIError with code
// unknown_mcp_server.
func (c *Client) MCPServer(ctx context.Context, name string, out any) error {
	_, err := c.do(ctx, http.MethodGet, "/v1/mcp/servers/"+url.PathEscape(name), nil, out)
	return err
}
