package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// AddRule adds a run-time policy rule (POST /v1/policy/rules, admin
// agents only): body is the endpoint's JSON ({"capability", "target",
// "action", "sender_id", "agent", "channel", "position"}); the answer is
// the rule as the gateway stored it, as the gateway wrote it.
func (c *Client) AddRule(ctx context.Context, body any) (json.RawMessage, error) {
	var out json.RawMessage
	_, err := c.do(ctx, http.MethodPost, "/v1/policy/rules", body, &out)
	return out, err
}
