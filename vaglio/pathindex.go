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
