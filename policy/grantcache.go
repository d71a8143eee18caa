package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	// words are the reason and detail of a decision g allowed for the
	// entry's principal (traceWords.grant), written by the first such
	// decision under the cache's lock and read under it after.
	words *grantWords
}

// grantWords are the words a decision a grant allowed carries.
type grantWords struct{ reason, detail string }

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
	g, _, _, err := c.find(ctx, p, ss, cp, target, c.store.norm.subject(cp.TargetKind, target), false)
	return g, err
}

// findWithWords is FindMatching for the capability cp, with the target's
// subject t as the store's Normalizer reads it (Normalizer.subject), also
// answering the words of a decision the grant allows p (traceWords.grant
// with p's channel and sender), written once per cached grant and shared
// after; at is the time the grant was found unexpired at (zero when the
// store answered), for touchAt.
func (c *GrantCache) findWithWords(ctx context.Context, p Principal, ss Session, cp Capability, target, t string) (_ *Grant, _ grantWords, at time.Time, _ error) {
	return c.find(ctx, p, ss, cp, target, t, true)
}

// find is FindMatching, with the grant's words when withWords.
func (c *GrantCache) find(ctx context.Context, p Principal, ss Session, cp Capability, target, t string, withWords bool) (*Grant, grantWords, time.Time, error) {
	capability := cp.Name
	ver, err := c.version.Current(ctx)
	if err != nil {
		g, err := c.store.FindMatching(ctx, p, ss, capability, target)
		return g, grantWords{}, time.Time{}, err
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
			return nil, grantWords{}, time.Time{}, err
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
	var best *cachedGrant
	var anchors [16]string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range appendAnchorsOf(anchors[:0], cp.TargetKind, t) {
		if !e.mayHold(a) {
			continue
		}
		list := e.byAnchor[a]
		for i := range list {
			cg := &list[i]
			g := cg.g
			if best != nil && g.ID >= best.g.ID {
				break
			}
			if (g.ExpiresAt == nil || g.ExpiresAt.After(now)) && g.covers(ss) && matchGrantTo(cp.TargetKind, cg.pat, cg.glob, t) {
				best = cg
				break
			}
		}
	}
	if best == nil {
		return nil, grantWords{}, time.Time{}, nil
	}
	var words grantWords
	if withWords {
		if best.words == nil {
			var w traceWords
			reason, detail := w.grant(best.g.ID, best.g.Target, p.Channel, p.SenderID)
			best.words = &grantWords{reason, detail}
		}
		words = *best.words
	}
	// The cached grant itself, shared, not a copy: a caller reads it and
	// passes it to Touch, which changes it under c.mu only.
	return best.g, words, now, nil
}

// Touch records the use in the store and in the cached grant, so the next
// decision within touchEvery does not write again. g is the grant
// FindMatching returned: the store touches a copy taken under c.mu, and
// the cached grant takes the new time under c.mu.
func (c *GrantCache) Touch(ctx context.Context, g *Grant) error {
	return c.touchAt(ctx, g, c.store.now())
}

// touchAt is Touch with now, the time of the use: the decision's find
// read the clock once for the grant's expiry and for its use.
func (c *GrantCache) touchAt(ctx context.Context, g *Grant, now time.Time) error {
	c.mu.Lock()
	cp := *g
	c.mu.Unlock()
	before := cp.LastUsedAt
	if err := c.store.touchAt(ctx, &cp, now); err != nil {
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
