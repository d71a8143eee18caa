package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// secretKeys are names a person might use to put a secret straight in the
// file; the unknown-key error for them says where the secret belongs instead.
var secretKeys = map[string]bool{
	"token": true, "bot_token": true, "app_token": true, "admin_token": true,
	"signing_secret": true, "webhook_secret": true, "secret": true,
	"password": true, "dsn": true, "api_key": true,
}

// maxUnknownKeys bounds the report: a file with thousands of unknown keys is
// not a config, and listing them all would only bury the first.
const maxUnknownKeys = 20

// unknownKeys reports every key the decoder did not use, with array indices
// ("agents[1].tokne"), which MetaData leaves out, found by walking the file
// decoded as plain maps. Keys inside an unknown table are not repeated.
func unknownKeys(data []byte, md toml.MetaData, known map[string][]string, p *problems) {
	und := md.Undecoded()
	if len(und) == 0 {
		return
	}
	var tree map[string]any
	if _, err := toml.Decode(string(data), &tree); err != nil {
		tree = nil
	}
	seen := map[string]bool{}
	reported := 0
	for _, k := range und {
		// MetaData lists a key once per array element it is in; locate finds
		// them all at once.
		if seen[k.String()] || len(k) > 1 && seen[toml.Key(k[:len(k)-1]).String()] {
			seen[k.String()] = true
			continue
		}
		seen[k.String()] = true
		if reported >= maxUnknownKeys {
			p.add(keyPath(k), "unknown key (and more; fix these first)")
			return
		}
		paths := locate(tree, k, "")
		if len(paths) == 0 {
			paths = []string{keyPath(k)}
		}
		if len(paths) > maxUnknownKeys {
			paths = append(paths[:maxUnknownKeys], fmt.Sprintf("%s (and %d more)", keyPath(k), len(paths)-maxUnknownKeys))
		}
		reported += len(paths)
		for _, path := range paths {
			switch last := k[len(k)-1]; {
			case secretKeys[last]:
				p.add(path, "unknown key (secrets are never read from the file: put the value in an environment variable and name it with the matching *_env key)")
			case suggest(known, k) != "":
				p.add(path, "unknown key (did you mean %s?)", suggest(known, k))
			default:
				p.add(path, "unknown key")
			}
		}
	}
}

// knownKeys maps a table's key (without array indices, "" for the top) to
// the keys it may hold, read from the toml tags of the type the file is
// decoded into (fileView).
func knownKeys(view reflect.Type) map[string][]string {
	out := map[string][]string{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			switch {
			case name == "-" || !f.IsExported():
				continue
			case f.Anonymous && name == "":
				walk(prefix, f.Type)
				continue
			case name == "":
				name = f.Name
			}
			out[prefix] = append(out[prefix], name)
			walk(strings.TrimPrefix(prefix+"."+name, "."), f.Type)
		}
	}
	walk("", view)
	return out
}

// suggest returns the known sibling closest to an unknown key, if it is
// within two edits, to turn "lisen" into "did you mean listen?".
func suggest(known map[string][]string, k toml.Key) string {
	parent, key := strings.Join(k[:len(k)-1], "."), k[len(k)-1]
	best, bestD := "", 3
	for _, name := range known[parent] {
		// At most two edits, and not more than half the key: "x" is not a typo of "id".
		if d := editDistance(key, name); d < bestD && 2*d <= len(key) {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps of
// neighbours that turn a into b (optimal string alignment distance).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// locate finds the paths of key k in the decoded tree, one per array element it sits in.
func locate(node any, k toml.Key, prefix string) []string {
	if len(k) == 0 {
		return []string{prefix}
	}
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	v, ok := m[k[0]]
	if !ok {
		return nil
	}
	here := joinKey(prefix, k[0])
	switch arr := v.(type) {
	case []map[string]any:
		return locateEach(arr, k, here)
	case []any:
		return locateEach(arr, k, here)
	}
	return locate(v, k[1:], here)
}

// locateEach is locate for an array: the key's paths in each of its elements
// (the array itself when k names it).
func locateEach[E any](arr []E, k toml.Key, here string) []string {
	if len(k) == 1 {
		return []string{here}
	}
	var out []string
	for i, e := range arr {
		out = append(out, locate(e, k[1:], fmt.Sprintf("%s[%d]", here, i))...)
	}
	return out
}

func keyPath(k toml.Key) string {
	s := ""
	for _, piece := range k {
		s = joinKey(s, piece)
	}
	return s
}

var bareKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends a key piece the way TOML writes it, quoted when not bare.
func joinKey(prefix, piece string) string {
	if !bareKeyRE.MatchString(piece) {
		piece = strconv.Quote(piece)
	}
	if prefix == "" {
		return piece
	}
	return prefix + "." + piece
}
