package policy

import (
	"maps"
	"sync/atomic"
)

// The profile and table steps' words are a function of the agent, the
// levels and the capability: a gateway has a few agents, so the words of
// each combination are written once and shared by every decision after
// (strings are never changed), which then writes and allocates none.

// profileKey is what profileAndTable's words depend on (the effective
// level is MinLevel of the two, or the ceiling).
type profileKey struct {
	agent              string
	requested, ceiling Level
	capability         string
}

// profileWords are the words of one profileKey.
type profileWords struct{ profile, table string }

// maxProfileWords bounds the cache: past it, the words of a new
// combination are written for each decision as before, never cached.
const maxProfileWords = 256

// profileWordsCache is an immutable map, replaced whole when a miss adds
// to it: a hit is one atomic load and one map probe, without a lock.
var profileWordsCache atomic.Pointer[map[profileKey]profileWords]

// cachedProfileWords returns the words of the profile and table steps of
// a decision (see traceWords.profileAndTable): from the cache, or written
// into w with room for more bytes after them, and cached when there is
// room in the cache.
func cachedProfileWords(w *traceWords, agent string, requested, ceiling, level Level, capability string, room int) (profile, table string) {
	k := profileKey{agent: agent, requested: requested, ceiling: ceiling, capability: capability}
	cache := profileWordsCache.Load()
	if cache != nil {
		if pw, ok := (*cache)[k]; ok {
			return pw.profile, pw.table
		}
	}
	profile, table = w.profileAndTable(agent, requested, ceiling, level, capability, room)
	if cache != nil && len(*cache) >= maxProfileWords {
		return profile, table
	}
	// A copy with the new words: they are cut from w's buffer, which
	// later words of this decision extend but never write over.
	next := make(map[profileKey]profileWords, 1+lenOf(cache))
	if cache != nil {
		maps.Copy(next, *cache)
	}
	next[k] = profileWords{profile, table}
	// Two misses at once may each store their copy: one is lost, and its
	// words are written again on a later decision. Nothing else differs.
	profileWordsCache.Store(&next)
	return profile, table
}

func lenOf(m *map[profileKey]profileWords) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
