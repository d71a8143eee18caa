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
// string value.
type argEvent struct {
	loc    string // where it is, for reasons: args.a.b[2]
	keyAt  string // the dotted key path, for the log: a.b, items[].name
	s      string // the key or the value (for a list, its items joined)
	isKey  bool
	isList bool // s is a list's scalar items joined with spaces
}

// walkArgs calls fn for every key and every string value in args, depth
// first, map keys in sorted order so reasons are deterministic. It stops when
// fn returns false. It reports whether some part was deeper than maxArgDepth
// and so was not visited.
//
// Args normally hold what encoding/json decodes (map[string]any, []any,
// string, float64, bool, nil), but Go callers may build them by hand, so
// any map, slice, array, pointer or struct is walked through reflection.
func walkArgs(args map[string]any, fn func(argEvent) bool) (tooDeep bool) {
	w := argWalker{fn: fn}
	w.run(args)
	return w.tooDeep
}

type argWalker struct {
	fn func(argEvent) bool
	// joinLists also emits, for every list, its scalar items joined with
	// spaces (nested lists flattened), before the items themselves: the
	// seed reads a "command" list as one command line.
	joinLists bool
	stopped   bool
	tooDeep   bool
}

func (w *argWalker) run(args map[string]any) {
	w.walk(reflect.ValueOf(args), "args", "", 0)
}

func (w *argWalker) emit(e argEvent) {
	if !w.stopped && !w.fn(e) {
		w.stopped = true
	}
}

func (w *argWalker) walk(v reflect.Value, loc, keyAt string, depth int) {
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
			w.walk(v.Elem(), loc, keyAt, depth+1)
		}
	case reflect.String:
		w.emit(argEvent{loc: loc, keyAt: keyAt, s: v.String()})
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
			childLoc, childAt := loc+"."+e.name, joinKey(keyAt, e.name)
			if e.isString {
				w.emit(argEvent{loc: childLoc, keyAt: childAt, s: e.name, isKey: true})
			}
			w.walk(v.MapIndex(e.key), childLoc, childAt, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// A []byte would be base64 in JSON, but a path in it is still a path.
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			w.emit(argEvent{loc: loc, keyAt: keyAt, s: string(b)})
			return
		}
		if w.joinLists {
			var b strings.Builder
			if joinScalars(&b, v, depth) {
				w.emit(argEvent{loc: loc, keyAt: keyAt, s: b.String(), isList: true})
			}
		}
		for i := range v.Len() {
			w.walk(v.Index(i), loc+"["+strconv.Itoa(i)+"]", keyAt+"[]", depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				w.emit(argEvent{loc: loc + "." + f.Name, keyAt: joinKey(keyAt, f.Name), s: f.Name, isKey: true})
				w.walk(v.Field(i), loc+"."+f.Name, joinKey(keyAt, f.Name), depth+1)
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

func joinKey(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// argKeys returns the sorted, de-duplicated key paths of args for the
// decision log: top-level keys as they are, nested ones dotted (a.b), keys
// of objects inside arrays with [] (items[].name). Never values.
func argKeys(args map[string]any) []string {
	seen := map[string]bool{}
	walkArgs(args, func(e argEvent) bool {
		if e.isKey {
			seen[e.keyAt] = true
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
