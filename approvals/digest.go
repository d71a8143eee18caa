package approvals

import (
	"context"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	countOutcomes = `SELECT status, COUNT(*) FROM requests
	WHERE created_at >= $1 AND created_at < $2 AND outcome = $3 GROUP BY status`
)

// Digest is the daily summary of [approvals] digest: what reached a person
// between From and To and how it ended, and the approve rules the history
// suggests. One message per messenger that is a DigestSender.
type Digest struct {
	From, To time.Time
	DigestCounts
	// Suggestions are the first few of the web page's Suggestions (most
	// used first); Link is that section's address.
	Suggestions []DigestSuggestion
	Link        string
	// GrantsExpiring and GrantsUnused are the active grants that expire
	// within 7 days and those unused for 30 (the grant review), at most
	// DigestGrantsMax of each; MoreExpiring and MoreUnused count the rest.
	GrantsExpiring, GrantsUnused []DigestGrant
	MoreExpiring, MoreUnused     int
}

// DigestGrantsMax is how many grants of each kind a digest names; the web
// page's Grants section lists them all.
const DigestGrantsMax = 5

// DigestGrant is one grant as the digest names it. Agent (the agent it is
// for, "" for every agent of its principal), Capability and Target are
// agents' strings: a messenger escapes them as it escapes cards.
type DigestGrant struct {
	ID                        int64
	Agent, Capability, Target string
	ExpiresAt, LastUsedAt     *time.Time
}

// DigestCounts are the requests that arrived between From and To and
// needed a person (Asked), by how they stand now.
type DigestCounts struct {
	Asked, Allowed, Denied, Expired, Cancelled, Pending int
}

// DigestSuggestion is one suggested approve rule as a digest names it.
// Every field but Count is an agent's string: a messenger escapes it as it
// escapes cards.
type DigestSuggestion struct {
	Agent, Capability, Target string
	Count                     int
}

// DigestSender is implemented by a Notifier that can post the digest on
// its messenger (a plain message: nothing in it is decided by a tap).
type DigestSender interface {
	SendDigest(ctx context.Context, d Digest) error
}

// DigestCounts counts the requests created in [from, to) that needed a
// person on arrival, by their status now.
func (s *Service) DigestCounts(ctx context.Context, from, to time.Time) (DigestCounts, error) {
	rows, err := s.db.QueryContext(ctx, countOutcomes,
		storage.FormatTime(from), storage.FormatTime(to), string(policy.ApprovalRequired))
	if err != nil {
		return DigestCounts{}, err
	}
	defer rows.Close()
	var c DigestCounts
	for rows.Next() {
		var st Status
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return DigestCounts{}, err
		}
		c.Asked += n
		switch st {
		case StatusAllowed:
			c.Allowed += n
		case StatusDenied:
			c.Denied += n
		case StatusExpired:
			c.Expired += n
		case StatusCancelled:
			c.Cancelled += n
		case StatusPending:
			c.Pending += n
		}
	}
	return c, rows.Err()
}
