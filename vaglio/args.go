package vaglio

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// maxArgDepth bounds how deep args are walked. JSON from the HTTP API is far
// shallower; the bound exists so a cyclic Go value (a map holding itself)
// cannot loop forever. The guard refuses args deeper than this, because it
// could not look at all of them.
const maxArgDepth = 64

// argEvent is one string found while walking args: either a map key or a
// string value. Where it is (the walker's loc and keyAt) is spelt out only
// when asked for: most strings pass, and their places are never shown.
type argEvent struct {
	s      string // the key or the value (for a list, its items joined)
	isKey  bool
	isList bool // s is a list's scalar items joined with spaces
}

// argVisitor is told of every string of a walk; false stops the walk. A
// visitor that needs to know where a string is holds its walker.
type argVisitor interface {
	visit(e argEvent) bool
}

// loc says where the string being visited is, for reasons: args.a.b[2].
func (w *argWalker) loc() string {
	b := []byte("args")
	for _, p := range w.path {
		if p.index < 0 {
			b = append(append(b, '.'), p.name...)
		} else {
			b = append(strconv.AppendInt(append(b, '['), int64(p.index), 10), ']')
		}
	}
	return string(b)
}

// keyAt is the dotted key path of the string being visited, for the log:
// a.b, items[].name.
func (w *argWalker) keyAt() string {
	if len(w.path) == 1 && w.path[0].index < 0 {
		return w.path[0].name // a top-level key, as the loop below writes it
	}
	var b []byte
	for _, p := range w.path {
		switch {
		case p.index >= 0:
			b = append(b, "[]"...)
		case len(b) > 0:
			b = append(append(b, '.'), p.name...)
		default:
			b = append(b, p.name...)
		}
	}
	return string(b)
}

// walkArgs calls fn for every key and every string value in args, depth
// first, map keys in sorted order so reasons are deterministic. It stops when
// fn returns false. It reports whether some part was deeper than maxArgDepth
// and so was not visited.
//
// Args normally hold what encoding/json decodes (map[string]any, []any,
// string, float64, bool, nil), walked directly; Go callers may build them
// by hand, so any other map, slice, array, pointer or struct is walked
// through reflection. Depth counts as reflection counts it: an interface
// holding a value is one level, the value another.
func walkArgs(args map[string]any, fn func(w *argWalker, e argEvent) bool) (tooDeep bool) {
	w := &argWalker{}
	w.visitor = funcVisitor{w: w, fn: fn}
	w.run(args)
	return w.tooDeep
}

// funcVisitor is a function as an argVisitor.
type funcVisitor struct {
	w  *argWalker
	fn func(w *argWalker, e argEvent) bool
}

func (v funcVisitor) visit(e argEvent) bool { return v.fn(v.w, e) }

type argWalker struct {
	visitor argVisitor
	// joinLists also emits, for every list, its scalar items joined with
	// spaces (nested lists flattened), before the items themselves: the
	// seed reads a "command" list as one command line.
	joinLists bool
	stopped   bool
	tooDeep   bool
	path      []argStep // where the walk is
	pathBuf   [8]argStep
}

// argStep is one step of the walk's path: a key or field name, or a list
// index (index >= 0).
type argStep struct {
	name  string
	index int
}

func (w *argWalker) run(args map[string]any) {
	w.path = w.pathBuf[:0]
	w.walkValue(args, 0)
}

func (w *argWalker) emit(e argEvent) {
	if !w.stopped && !w.visitor.visit(e) {
		w.stopped = true
	}
}

func (w *argWalker) push(name string, index int) {
	w.path = append(w.path, argStep{name: name, index: index})
}
func (w *argWalker) pop() { w.path = w.path[:len(w.path)-1] }

// walkSlot walks what an interface slot (a map value, a list item) holds:
// the slot is one level, its value the next.
func (w *argWalker) walkSlot(v any, depth int) {
	if w.stopped {
		return
	}
	if depth > maxArgDepth {
		w.tooDeep = true
		return
	}
	if v != nil {
		w.walkValue(v, depth+1)
	}
}

// walkValue walks a value decoded from JSON directly, anything else
// through reflection.
func (w *argWalker) walkValue(v any, depth int) {
	if w.stopped {
		return
	}
	if depth > maxArgDepth {
		w.tooDeep = true
		return
	}
	switch x := v.(type) {
	case string:
		w.emit(argEvent{s: x})
	case float64, bool:
	case map[string]any:
		// Keys and values are taken in one pass over the map, then
		// sorted by key: no key is looked up again.
		var buf [8]argEntry
		entries := buf[:0]
		for k, v := range x {
			entries = append(entries, argEntry{k, v})
		}
		slices.SortFunc(entries, func(a, b argEntry) int { return strings.Compare(a.key, b.key) })
		for _, e := range entries {
			w.push(e.key, -1)
			w.emit(argEvent{s: e.key, isKey: true})
			w.walkSlot(e.val, depth+1)
			w.pop()
		}
	case []any:
		if w.joinLists {
			w.emitJoined(reflect.ValueOf(x), depth)
		}
		for i, e := range x {
			w.push("", i)
			w.walkSlot(e, depth+1)
			w.pop()
		}
	default:
		w.walk(reflect.ValueOf(v), depth)
	}
}

// argEntry is one key of an args map with its value.
type argEntry struct {
	key string
	val any
}

// emitJoined emits a list's scalar items joined with spaces, if it has any.
func (w *argWalker) emitJoined(v reflect.Value, depth int) {
	var b strings.Builder
	if joinScalars(&b, v, depth) {
		w.emit(argEvent{s: b.String(), isList: true})
	}
}

func (w *argWalker) walk(v reflect.Value, depth int) {
	if w.stopped || !v.IsValid() {
		return
	}
	if depth > maxArgDepth {
		w.tooDeep = true
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem(), depth+1)
		}
	case reflect.String:
		w.emit(argEvent{s: v.String()})
	case reflect.Map:
		keys := v.MapKeys()
		type kv struct {
			name     string
			isString bool
			key      reflect.Value
		}
		named := make([]kv, 0, len(keys))
		for _, k := range keys {
			name, isString := keyName(k)
			named = append(named, kv{name: name, isString: isString, key: k})
		}
		slices.SortFunc(named, func(a, b kv) int { return strings.Compare(a.name, b.name) })
		for _, e := range named {
			w.push(e.name, -1)
			if e.isString {
				w.emit(argEvent{s: e.name, isKey: true})
			}
			w.walk(v.MapIndex(e.key), depth+1)
			w.pop()
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// A []byte would be base64 in JSON, but a path in it is still a path.
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			w.emit(argEvent{s: string(b)})
			return
		}
		if w.joinLists {
			w.emitJoined(v, depth)
		}
		for i := range v.Len() {
			w.push("", i)
			w.walk(v.Index(i), depth+1)
			w.pop()
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				w.push(f.Name, -1)
				w.emit(argEvent{s: f.Name, isKey: true})
				w.walk(v.Field(i), depth+1)
				w.pop()
			}
		}
	}
}

// joinScalars writes the scalar items of the list v to b, separated by
// spaces, flattening nested lists (the seed joins a command list with " ").
// Strings go as they are, numbers in their shortest form (777, not 777.0),
// booleans as true/false; maps and nils are left out (their strings are
// checked one by one anyway). It reports whether anything was written.
func joinScalars(b *strings.Builder, v reflect.Value, depth int) bool {
	wrote := false
	for i := range v.Len() {
		e := v.Index(i)
		for (e.Kind() == reflect.Interface || e.Kind() == reflect.Pointer) && !e.IsNil() && depth < maxArgDepth {
			e, depth = e.Elem(), depth+1
		}
		var s string
		switch e.Kind() {
		case reflect.String:
			s = e.String()
		case reflect.Float32, reflect.Float64:
			s = strconv.FormatFloat(e.Float(), 'f', -1, 64)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s = strconv.FormatInt(e.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			s = strconv.FormatUint(e.Uint(), 10)
		case reflect.Bool:
			s = strconv.FormatBool(e.Bool())
		case reflect.Slice, reflect.Array:
			if depth >= maxArgDepth || e.Type().Elem().Kind() == reflect.Uint8 {
				continue
			}
			var inner strings.Builder
			if !joinScalars(&inner, e, depth+1) {
				continue
			}
			s = inner.String()
		default:
			continue
		}
		if wrote {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		wrote = true
	}
	return wrote
}

// keyName names a map key and says whether it is a string (and so is looked
// at like any other string in args).
func keyName(k reflect.Value) (string, bool) {
	for k.Kind() == reflect.Interface && !k.IsNil() {
		k = k.Elem()
	}
	switch k.Kind() {
	case reflect.String:
		return k.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), false
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), false
	}
	return "?", false
}

// argKeys returns the sorted, de-duplicated key paths of args for the
// decision log: top-level keys as they are, nested ones dotted (a.b), keys
// of objects inside arrays with [] (items[].name). Never values.
func argKeys(args map[string]any) []string {
	seen := map[string]bool{}
	walkArgs(args, func(w *argWalker, e argEvent) bool {
		if e.isKey {
			seen[w.keyAt()] = true
		}
		return true
	})
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ArgKeys returns the sorted key paths of args (a, a.b, items[].name),
// never their values: what the decision log records and what the LLM judge
// shows its model by default.
func ArgKeys(args map[string]any) []string { return argKeys(args) }
