package vaglio

import (
	"slices"
	"sync"
)

// logKeys builds one decision log line: its key lists and its bytes, in
// buffers reused from line to line (the log writer copies the line, so
// nothing of them outlives it).
type logKeys struct {
	w                    argWalker
	args, context, paths []string
	line                 []byte
}

var logKeysPool = sync.Pool{New: func() any {
	return &logKeys{args: make([]string, 0, 8), context: make([]string, 0, 8), paths: make([]string, 0, 16)}
}}

// maxPooledLine is the largest line buffer kept for the next line: a
// request with huge args does not pin its line's memory.
const maxPooledLine = 16 << 10

// release clears what refers to the request and returns k to the pool.
func (k *logKeys) release() {
	clear(k.args[:cap(k.args)])
	clear(k.context[:cap(k.context)])
	clear(k.paths[:cap(k.paths)])
	k.w = argWalker{}
	if cap(k.line) > maxPooledLine {
		k.line = nil
	}
	logKeysPool.Put(k)
}

// topKeys sets k.args to the sorted top-level keys of args.
func (k *logKeys) topKeys(args map[string]any) []string {
	k.args = appendSortedKeys(k.args[:0], args)
	return k.args
}

// contextKeys sets k.context to what vaglio was told about the request
// besides its intent, executor and args: agent and capability, and the
// keys the request's own context declares, sorted.
func (k *logKeys) contextKeys(r Request) []string {
	keys := appendSortedKeys(k.context[:0], r.Context)
	if r.Agent != "" && !slices.Contains(keys, "agent") {
		keys = append(keys, "agent")
	}
	if r.Capability != "" && !slices.Contains(keys, "capability") {
		keys = append(keys, "capability")
	}
	slices.Sort(keys)
	k.context = keys
	return keys
}

// argKeys sets k.paths to argKeys(args): every key path, sorted, each once.
func (k *logKeys) argKeys(args map[string]any) []string {
	k.paths = k.paths[:0]
	k.w = argWalker{visitor: k}
	k.w.run(args)
	slices.Sort(k.paths)
	k.paths = slices.Compact(k.paths)
	return k.paths
}

// visit collects the key paths of argKeys.
func (k *logKeys) visit(e argEvent) bool {
	if e.isKey {
		k.paths = append(k.paths, k.w.keyAt())
	}
	return true
}

// appendSortedKeys appends the keys of m to dst, sorted.
func appendSortedKeys(dst []string, m map[string]any) []string {
	for key := range m {
		dst = append(dst, key)
	}
	slices.Sort(dst)
	return dst
}
