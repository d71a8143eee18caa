package vaglio

import (
	"maps"
	"slices"
	"testing"
)

// TestLogKeys: the log's key lists, built in reused buffers, are what
// the key functions of the args walk and the maps say, line after line
// with the same buffers, and never nil (the log writes [] for none).
func TestLogKeys(t *testing.T) {
	type inner struct{ Name, Path string }
	deep := map[string]any{"v": "x"}
	for range maxArgDepth + 2 {
		deep = map[string]any{"d": deep}
	}
	requests := []Request{
		{Agent: "metnos", Capability: "fs:read", Args: map[string]any{"path": "/home/r/a", "encoding": "utf-8"}},
		{},
		{Agent: "a", Args: map[string]any{"items": []any{map[string]any{"name": "x", "k": 1.0}, map[string]any{"name": "y"}},
			"opts": map[string]any{"b": map[string]any{"c": "z"}, "a": true}}, Context: map[string]any{"cwd": "/", "agent": "x"}},
		{Capability: "code:exec", Args: map[string]any{"s": inner{"n", "/etc"}, "p": &inner{Path: "p"}, "l": []inner{{}, {}}},
			Context: map[string]any{"capability": 1, "zz": nil}},
		{Agent: "b", Args: deep},
		{Agent: "metnos", Capability: "fs:read", Args: map[string]any{"path": "/home/r/a"}},
	}
	k := logKeysPool.Get().(*logKeys)
	for round := range 2 {
		for _, r := range requests {
			wantTop := slices.Sorted(maps.Keys(r.Args))
			wantContext := slices.Sorted(maps.Keys(r.Context))
			for _, named := range []struct{ key, v string }{{"agent", r.Agent}, {"capability", r.Capability}} {
				if named.v != "" && !slices.Contains(wantContext, named.key) {
					wantContext = append(wantContext, named.key)
				}
			}
			slices.Sort(wantContext)
			gotTop, gotContext, gotPaths := k.topKeys(r.Args), k.contextKeys(r), k.argKeys(r.Args)
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"args keys", gotTop, wantTop}, {"context keys", gotContext, wantContext}, {"arg key paths", gotPaths, argKeys(r.Args)}} {
				if c.got == nil || !slices.Equal(c.got, c.want) {
					t.Errorf("round %d, %v: %s = %q (nil %v), want %q", round, r.Args, c.what, c.got, c.got == nil, c.want)
				}
			}
		}
		k.release()
		k = logKeysPool.Get().(*logKeys)
	}
}
