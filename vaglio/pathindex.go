// The glob edges of a node with many of them, indexed by the byte an
// element must start or end with, so a walk tries only the edges that
// element can match.

package vaglio

// minIndexedGlobs is how many glob edges a node has before it indexes
// them: below it, trying each costs less than the index.
const minIndexedGlobs = 8

// edgeIndex holds a node's glob edges in three groups: prefix edges
// (name*) by the first byte of their name, suffix edges (*name) by the
// last byte of theirs, and every other edge.
type edgeIndex struct {
	byFirst [256][]*pathEdge
	byLast  [256][]*pathEdge
	rest    []*pathEdge
}

// indexGlobs builds n's index once its edges are all added.
func (n *pathNode) indexGlobs() {
	for _, e := range n.all {
		e.next.indexGlobs()
	}
	if len(n.globs) < minIndexedGlobs {
		return
	}
	x := &edgeIndex{}
	for _, e := range n.globs {
		switch {
		case e.kind == edgePrefix && e.fix != "":
			x.byFirst[e.fix[0]] = append(x.byFirst[e.fix[0]], e)
		case e.kind == edgeSuffix && e.fix != "":
			b := e.fix[len(e.fix)-1]
			x.byLast[b] = append(x.byLast[b], e)
		default:
			x.rest = append(x.rest, e)
		}
	}
	n.index = x
}

// globsFor returns the glob edges a plain element in may match, in three
// lists: every one of them, for a node without an index. An edge left
// out cannot match: a prefix edge's name starts with its first byte, a
// suffix edge's ends with its last, and neither name is empty.
func (n *pathNode) globsFor(in string) (a, b, c []*pathEdge) {
	if n.index == nil {
		return n.globs, nil, nil
	}
	if in == "" {
		return n.index.rest, nil, nil
	}
	return n.index.rest, n.index.byFirst[in[0]], n.index.byLast[in[len(in)-1]]
}

// enterFilter says, from an element's first and last bytes and its
// length, that it takes none of a node's edges: most elements of a path
// start no floating rule (home, docs, main.go against .ssh, *.aws, …),
// and the walk from the floating root at their position is then skipped.
type enterFilter struct {
	// on: the filter applies (no rule ends at the node itself).
	on bool
	// lits has the first byte of every literal edge's name (0 for the
	// empty name).
	lits [4]uint64
	// pairs[a] has every byte an element starting with a may end with
	// to pass the first and last tests of some glob edge's matchPlain
	// (the edges that test neither byte aside).
	pairs [256][4]uint64
	// anyLen is the fewest bytes an element takes one of the edges that
	// test neither byte with (*gitconfig*); noRule when there is none.
	anyLen int
}

// newEnterFilter is the filter of n's plain edges.
func newEnterFilter(n *pathNode) *enterFilter {
	f := &enterFilter{on: n.end == noRule && n.whole == noRule, lits: n.firsts, anyLen: noRule}
	for _, e := range n.globs {
		if e.first == allBytes && e.last == allBytes {
			f.anyLen = min(f.anyLen, e.minLen)
			continue
		}
		for a := range 256 {
			if e.first[a/64]&(1<<(a%64)) != 0 {
				for i := range e.last {
					f.pairs[a][i] |= e.last[i]
				}
			}
		}
	}
	return f
}

// mayTake is false when the plain element in takes no edge of the node:
// n.lit(in) is nil (its first byte starts no literal) and every glob
// edge's matchPlain is false (each needs in's first byte in its first
// set, its last byte in its last set, and at least its minLen bytes).
// The empty element is always let through.
func (f *enterFilter) mayTake(in string) bool {
	if !f.on || in == "" || len(in) >= f.anyLen {
		return true
	}
	a, z := in[0], in[len(in)-1]
	return f.lits[a/64]&(1<<(a%64)) != 0 || f.pairs[a][z/64]&(1<<(z%64)) != 0
}
