package client

import (
	"context"
	"net/http"
)

// Pending lists the requests waiting for a person, oldest first
// (GET /v1/requests?status=pending). Only admin agents may: the others
// get a 403 *APIError. More counts those past the list's bound.
func (c *Client) Pending(ctx context.Context) (list []Request, more int, err error) {
	var out struct {
		Requests []Request `json:"requests"`
		More     int       `json:"more"`
	}
	_, err = c.do(ctx, http.MethodGet, "/v1/requests?status=pending", nil, &out)
	return out.Requests, out.More, err
}
