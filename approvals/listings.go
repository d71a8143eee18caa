package approvals

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	selectPending = `SELECT ` + requestColumns + ` FROM requests WHERE status = 'pending'
	ORDER BY created_at LIMIT $1`
	selectPendingOn = `SELECT ` + requestColumns + ` FROM requests WHERE status = 'pending'
	AND id IN (SELECT request_id FROM cards WHERE channel = $2) ORDER BY created_at LIMIT $1`
	countPending = `SELECT COUNT(*) FROM requests WHERE status = 'pending'`
	// Finished requests, newest decision first: those decided at another
	// time than their creation through requests_decided (partial: it holds
	// them alone), those decided on arrival (decided_at = created_at)
	// through requests_created, each side cut to $1 and the two merged.
	// Every finished request has a decided_at (finishRequest, Submit).
	selectRecent = `SELECT * FROM (SELECT ` + requestColumns + ` FROM requests
	WHERE status != 'pending' AND decided_at != created_at ORDER BY decided_at DESC LIMIT $1) AS later
	UNION ALL SELECT * FROM (SELECT ` + requestColumns + ` FROM requests
	WHERE status != 'pending' AND decided_at = created_at ORDER BY created_at DESC LIMIT $1) AS on_arrival
	ORDER BY decided_at DESC LIMIT $1`
	selectSince = `SELECT ` + requestColumns + ` FROM requests WHERE created_at >= $1
	ORDER BY created_at, id LIMIT $2`
	selectNewest = `SELECT ` + requestColumns + ` FROM requests WHERE created_at >= $1
	ORDER BY created_at DESC, id DESC LIMIT $2`
	// A person's deny: what a suggested rule must never have allowed.
	selectPersonDenied = `SELECT ` + requestColumns + ` FROM requests WHERE created_at >= $1
	AND status = 'denied' AND decision IS NOT NULL AND outcome = 'approval_required' ORDER BY created_at, id`
)

// ListPending returns pending requests, oldest first.
func (s *Service) ListPending(ctx context.Context, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, selectPending, limit)
}

// ListPendingOn returns the pending requests whose card goes to channel
// ("slack", "discord"), oldest first: what a messenger's own list may
// show, never the requests of other channels and routes.
func (s *Service) ListPendingOn(ctx context.Context, channel string, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, selectPendingOn, limit, channel)
}

// CountPending counts pending requests (for the metrics gauge).
func (s *Service) CountPending(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, countPending).Scan(&n)
	return n, err
}

// ListRecent returns finished requests, newest decision first.
func (s *Service) ListRecent(ctx context.Context, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, selectRecent, limit)
}

// Window lists the requests of a replay (suggestions, POST
// /v1/policy/simulate), oldest first: the newest limit created at or after
// since, and every one of the window a person denied, however many others
// came after it (a replay must never lose the denials it is held to).
func (s *Service) Window(ctx context.Context, since time.Time, limit int) ([]Request, error) {
	from := storage.FormatTime(since)
	newest, err := listRequests(ctx, s.db, selectNewest, from, limit)
	if err != nil {
		return nil, err
	}
	denied, err := listRequests(ctx, s.db, selectPersonDenied, from)
	if err != nil {
		return nil, err
	}
	slices.Reverse(newest)
	seen := make(map[string]bool, len(newest))
	for _, r := range newest {
		seen[r.ID] = true
	}
	out := newest
	for _, r := range denied {
		if !seen[r.ID] {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Request) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Since lists the requests created at or after since, oldest first, at
// most limit.
func (s *Service) Since(ctx context.Context, since time.Time, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, selectSince, storage.FormatTime(since), limit)
}
