// Reading the file: its tables decoded straight over the defaults, by
// the toml tags of Config and of each registered section.

package config

import (
	"bytes"
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/metnos/gateway/policy"
)

// decode lays the file over cfg. A syntax or type error stops everything and
// is returned; problems with single keys go to p so that all are reported.
func decode(cfg *Config, data []byte, dir string, getenv func(string) string, p *problems) error {
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return tomlError(err)
	}
	view := cfg.fileView()
	// A value the decoder would stop at (a bad duration) is reported here
	// with its full key, all of them at once, and taken out of what is
	// decoded, so that the rest still is and every problem is reported.
	var bad problems
	text := string(data)
	if readText(tree, view.Type().Elem(), "", &bad) {
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
			return fmt.Errorf("re-encode the file: %w", err)
		}
		text = buf.String()
	}
	cfg.prefill(tree)
	md, err := toml.Decode(text, view.Interface())
	if err != nil {
		if len(bad) > 0 {
			// Lines would be those of the re-encoded text: name the key only.
			*p = append(*p, bad...)
			return withoutLine(tomlError(err))
		}
		return tomlError(err)
	}
	unknownKeys(data, md, knownKeys(view.Type()), p)
	*p = append(*p, bad...)
	cfg.afterFile(dir, getenv, p)
	return nil
}

// ownTables are the names of Config's own top-level tables.
func ownTables() map[string]bool {
	out := map[string]bool{"hooks": true}
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("toml"); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// fileView is what the file is decoded into: a pointer to a struct with
// one field per top-level table, each a pointer to the table's value in
// c (Config's own fields, then each registered section) tagged with the
// table's name, and [hooks] (Hooks.fileView). Decoding into it decodes
// straight over c's defaults.
func (c *Config) fileView() reflect.Value {
	cv := reflect.ValueOf(c).Elem()
	var fields []reflect.StructField
	var ptrs []reflect.Value
	for i := range cv.NumField() {
		f := cv.Type().Field(i)
		if name := f.Tag.Get("toml"); name == "" || name == "-" {
			continue
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: reflect.PointerTo(f.Type), Tag: f.Tag})
		ptrs = append(ptrs, cv.Field(i).Addr())
	}
	hooksView := c.Hooks.fileView()
	fields = append(fields, reflect.StructField{Name: "Hooks", Type: hooksView.Type(), Tag: `toml:"hooks"`})
	ptrs = append(ptrs, hooksView)
	for i, s := range c.sections {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("Section%d", i), Type: reflect.TypeOf(s.value),
			Tag: reflect.StructTag(`toml:"` + s.name + `"`)})
		ptrs = append(ptrs, reflect.ValueOf(s.value))
	}
	v := reflect.New(reflect.StructOf(fields))
	for i, ptr := range ptrs {
		v.Elem().Field(i).Set(ptr)
	}
	return v
}

// prefill gives each entry of the file's arrays of tables its defaults
// before the file is decoded over them (the decoder reuses the entries a
// slice already holds).
func (c *Config) prefill(tree map[string]any) {
	c.Agents = repeat(count(tree, "agents"), func() Agent { return NewAgent("") })
	c.Approvals.Routes = repeat(count(tree, "approvals", "routes"), func() Route { return Route{Quorum: 1} })
	c.MCP.Servers = repeat(count(tree, "mcp", "servers"), func() MCPServer {
		return MCPServer{UnknownTool: "ask", Wait: Duration(DefaultMCPWait), Tools: map[string]MCPTool{}}
	})
	if n := count(tree, "web", "users"); n > 0 {
		c.Web.Users = make([]WebUser, n) // the file's users replace the default one
	}
}

// count is the length of the array at path in the tree, 0 when none.
func count(tree map[string]any, path ...string) int {
	var node any = tree
	for _, k := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return 0
		}
		node = m[k]
	}
	if v := reflect.ValueOf(node); v.Kind() == reflect.Slice {
		return v.Len()
	}
	return 0
}

func repeat[T any](n int, def func() T) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = def()
	}
	return out
}

// afterFile does what the file's values mean beyond themselves: paths
// read from the file's directory, ~ expanded, an empty key that stands
// for its default, an agent's mode checked. An empty array is none.
func (c *Config) afterFile(dir string, getenv func(string) string, p *problems) {
	c.Storage.Path = filePath(c.Storage.Path, dir, getenv)
	c.Vaglio.LogDir = filePath(c.Vaglio.LogDir, dir, getenv)
	for i := range c.Agents {
		a := &c.Agents[i]
		for _, list := range [][]string{a.Run.Write, a.Run.ReadDeny} {
			for j, w := range list {
				list[j] = ExpandHome(w, getenv)
			}
		}
		if m, err := policy.ParseMode(string(a.Mode)); err != nil {
			p.wrap(fmt.Sprintf("agents[%d].mode", i), err)
			a.Mode = policy.ModeAsk
		} else {
			a.Mode = m
		}
	}
	c.Agents = nilIfEmpty(c.Agents)
	c.Policy.Notify = nilIfEmpty(c.Policy.Notify)
	c.Approvals.Routes = nilIfEmpty(c.Approvals.Routes)
	c.MCP.Servers = nilIfEmpty(c.MCP.Servers)
	c.Web.Users = nilIfEmpty(c.Web.Users)
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

var (
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	tomlUnmarshaler = reflect.TypeOf((*toml.Unmarshaler)(nil)).Elem()
)

// readText reads, as the decoder will, every value node gives a field of
// type t that reads text (Duration, policy.Level), and reports each that
// does not read with its full key ("agents[1].autonomy"). Such a value is
// taken out of node, so that its field keeps its default (an array's
// element becomes its type's zero, "0s"). It reports whether it took any.
func readText(node any, t reflect.Type, key string, p *problems) (bad bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(tomlUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			switch {
			case name == "-" || !f.IsExported():
				continue
			case f.Anonymous && name == "":
				bad = readText(m, f.Type, key, p) || bad
				continue
			case name == "":
				name = f.Name
			}
			k, ok := keyFor(m, name)
			if !ok {
				continue
			}
			if leafBad(m[k], f.Type, joinKey(key, k), p) {
				delete(m, k)
				bad = true
				continue
			}
			bad = readText(m[k], f.Type, joinKey(key, k), p) || bad
		}
	case reflect.Slice, reflect.Array:
		v := reflect.ValueOf(node)
		if v.Kind() != reflect.Slice {
			return false
		}
		for i := range v.Len() {
			ek := fmt.Sprintf("%s[%d]", key, i)
			if leafBad(v.Index(i).Interface(), t.Elem(), ek, p) {
				zero, _ := reflect.Zero(t.Elem()).Interface().(fmt.Stringer)
				v.Index(i).Set(reflect.ValueOf(zero.String()))
				bad = true
				continue
			}
			bad = readText(v.Index(i).Interface(), t.Elem(), ek, p) || bad
		}
	case reflect.Map:
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if leafBad(m[k], t.Elem(), joinKey(key, k), p) {
				delete(m, k)
				bad = true
				continue
			}
			bad = readText(m[k], t.Elem(), joinKey(key, k), p) || bad
		}
	}
	return bad
}

// leafBad reports (and says) whether v is a value a field of type t that
// reads text cannot read; false for any other type.
func leafBad(v any, t reflect.Type, key string, p *problems) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !reflect.PointerTo(t).Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(tomlUnmarshaler) {
		return false
	}
	s, ok := v.(string)
	if !ok {
		p.add(key, "incompatible types: TOML value has type %s; destination has type string", tomlType(v))
		return true
	}
	if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		p.wrap(key, err)
		return true
	}
	return false
}

// keyFor finds the key of m the decoder takes for a field named name: the
// same, else one equal under case folding.
func keyFor(m map[string]any, name string) (string, bool) {
	if _, ok := m[name]; ok {
		return name, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// tomlType names a decoded value's TOML type as the decoder's errors do.
func tomlType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "table"
	case []map[string]any, []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
