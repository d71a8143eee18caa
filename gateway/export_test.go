package gateway

import "context"

// What only the tests reach, for the external test package.

// EndWebSessions ends every web session (gateway logout --all).
func (a *App) EndWebSessions(ctx context.Context) (int, error) { return a.Server.sessions.EndAll(ctx) }
