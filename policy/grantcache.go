package policy

import (
	"context"
	"fmt"
	"sync"

	"github.com/metnos/gateway/storage"
)

// maxCacheKeys bounds the cache; past it the cache starts over.
const maxCacheKeys = 50_000

// VersionSource says whether grants changed since it last answered (see
// storage.GrantsVersion). Any error makes the cache step aside.
type VersionSource interface {
	Current(ctx context.Context) (int64, error)
}

// GrantCache is a read-through cache of active grants in front of a
// GrantStore, keyed by (principal, capability) and indexed by anchor like
// the table. Before every lookup it asks the version source whether any
// process changed grants; if so it starts over, so a revoke from the CLI
// or another replica still takes effect on the very next decision. A
// decision then costs a version check and a few map probes instead of an
// SQLite query. Expiry is checked at lookup time.
type GrantCache struct {
	store   *GrantStore
	version VersionSource

	mu      sync.Mutex
	ver     int64
	entries map[cacheKey]*cacheEntry
}

type cacheKey struct{ channel, sender, capability string }

type cacheEntry struct {
	byAnchor map[string][]cachedGrant // in id order
	byID     map[int64]*Grant
	// lens has bit len(a)%128 set for every anchor a of byAnchor: an
	// anchor whose bit is clear holds no grant and is not looked up.
	lens [2]uint64
}

// cachedGrant is a grant with its pattern read once, as MatchGrant
// reads it (see Normalizer.grantPattern).
type cachedGrant struct {
	g    *Grant
	pat  string
	glob bool
}

// add files g under its anchor.
func (e *cacheEntry) add(n Normalizer, kind TargetKind, g *Grant) {
	a := n.Anchor(kind, g.Target)
	cg := cachedGrant{g: g}
	cg.pat, cg.glob = n.grantPattern(kind, g.Target)
	e.byAnchor[a] = append(e.byAnchor[a], cg)
	e.byID[g.ID] = g
	e.lens[len(a)/64%2] |= 1 << (len(a) % 64)
}

// mayHold is false for an anchor no grant of e is filed under.
func (e *cacheEntry) mayHold(a string) bool { return e.lens[len(a)/64%2]&(1<<(len(a)%64)) != 0 }

// NewGrantCache wraps store.
func NewGrantCache(store *GrantStore, version VersionSource) *GrantCache {
	return &GrantCache{store: store, version: version, entries: map[cacheKey]*cacheEntry{}}
}

const listActiveFor = `SELECT ` + grantColumns + ` FROM grants
WHERE channel = $1 AND sender_id = $2 AND capability = $3 AND revoked_at IS NULL
AND (expires_at IS NULL OR expires_at > $4) ORDER BY id`

// activeFor loads every active grant of p for one capability, oldest first.
func (s *GrantStore) activeFor(ctx context.Context, p Principal, capability string) ([]Grant, error) {
	now := s.now()
	rows, err := s.db.QueryContext(ctx, listActiveFor, p.Channel, p.SenderID, capability, storage.FormatTime(now))
	if err != nil {
		return nil, fmt.Errorf("load grants: %w", err)
	}
	defer rows.Close()
	var out []Grant
	for rows.Next() {
		g, err := scanGrant(rows, now)
		if err != nil {
			return nil, fmt.Errorf("load grants: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// FindMatching is GrantStore.FindMatching through the cache.
func (c *GrantCache) FindMatching(ctx context.Context, p Principal, ss Session, capability, target string) (*Grant, error) {
	cp, err := Lookup(capability)
	if err != nil {
		return nil, err
	}
	ver, err := c.version.Current(ctx)
	if err != nil {
		return c.store.FindMatching(ctx, p, ss, capability, target)
	}
	key := cacheKey{p.Channel, p.SenderID, capability}
	c.mu.Lock()
	if ver != c.ver || len(c.entries) > maxCacheKeys {
		clear(c.entries)
		c.ver = ver
	}
	e := c.entries[key]
	c.mu.Unlock()
	if e == nil {
		list, err := c.store.activeFor(ctx, p, capability)
		if err != nil {
			return nil, err
		}
		e = &cacheEntry{byAnchor: map[string][]cachedGrant{}, byID: make(map[int64]*Grant, len(list))}
		for i := range list {
			e.add(c.store.norm, cp.TargetKind, &list[i])
		}
		c.mu.Lock()
		if c.ver == ver {
			c.entries[key] = e
		}
		c.mu.Unlock()
	}
	now := c.store.now()
	var best *Grant
	var anchors [16]string
	c.mu.Lock()
	defer c.mu.Unlock()
	// The target as grants are matched against, read once for all of them.
	t := c.store.norm.subject(cp.TargetKind, target)
	for _, a := range appendAnchorsOf(anchors[:0], cp.TargetKind, t) {
		if !e.mayHold(a) {
			continue
		}
		for _, cg := range e.byAnchor[a] {
			g := cg.g
			if best != nil && g.ID >= best.ID {
				break
			}
			if (g.ExpiresAt == nil || g.ExpiresAt.After(now)) && g.covers(ss) && matchGrantTo(cp.TargetKind, cg.pat, cg.glob, t) {
				best = g
				break
			}
		}
	}
	// The cached grant itself, shared, not a copy: a caller reads it and
	// passes it to Touch, which changes it under c.mu only.
	return best, nil
}

// Touch records the use in the store and in the cached grant, so the next
// decision within touchEvery does not write again. g is the grant
// FindMatching returned: the store touches a copy taken under c.mu, and
// the cached grant takes the new time under c.mu.
func (c *GrantCache) Touch(ctx context.Context, g *Grant) error {
	c.mu.Lock()
	cp := *g
	c.mu.Unlock()
	before := cp.LastUsedAt
	if err := c.store.Touch(ctx, &cp); err != nil {
		return err
	}
	if cp.LastUsedAt == before {
		// Not written (used within touchEvery): the cached grant holds
		// this use's time, or a later one, already.
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g.LastUsedAt = cp.LastUsedAt
	if e := c.entries[cacheKey{g.Channel, g.SenderID, g.Capability}]; e != nil {
		if cached := e.byID[g.ID]; cached != nil {
			cached.LastUsedAt = cp.LastUsedAt
		}
	}
	return nil
}
