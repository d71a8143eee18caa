package hooks

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// What a tool call's input is made into, for every adapter:
//
//   - args: the whole tool input, so the guard looks at every field of
//     it, not only the one the target came from. Only what a tool writes
//     (a file's content, an edit's old and new text) is left out: it is
//     data, not a place, and can be megabytes.
//   - target: a path field resolved against the tool's own working
//     directory (Codex's workdir, Gemini's directory, else the event's
//     cwd), and a glob as written, never reduced to its directory.
//   - ask: when the input holds two candidate fields for one path
//     (file_path and absolute_path, path, target_file …) that name
//     different files, the tool may use either: the call needs a person,
//     whatever rules and grants say.

// pathFields are every field name a tool of some agent or version reads
// its file or directory from.
var pathFields = []string{"file_path", "filePath", "absolute_path", "path", "target_file", "notebook_path", "filename", "file", "dir_path", "target_directory", "directory", "dir"}

// dataFields hold what a tool writes, left out of args.
var dataFields = map[string]bool{
	"content": true, "contents": true, "old_string": true, "new_string": true, "old_str": true, "new_str": true,
	"new_source": true, "code_edit": true, "edits": true, "file_text": true, "diff": true, "oldString": true, "newString": true,
}

// inputArgs is the tool input for the guard: every field but what it
// writes (each replaced by its size, so the log still names the key).
func inputArgs(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if dataFields[k] {
			if s, ok := v.(string); ok {
				out[k] = fmt.Sprintf("(%d bytes, not sent)", len(s))
			} else {
				out[k] = "(not sent)"
			}
			continue
		}
		out[k] = v
	}
	return out
}

// webArgs is inputArgs of a fetch tool with every URL in its strings cut
// to scheme, host and path: a query or fragment may hold a token, and
// the guard needs the host, not the token.
func webArgs(in map[string]any) map[string]any {
	out := inputArgs(in)
	for k, v := range out {
		if s, ok := v.(string); ok {
			if k == "url" {
				out[k] = strip(s)
			} else {
				out[k] = urlIn.ReplaceAllStringFunc(s, strip)
			}
		}
	}
	return out
}

// urlIn finds what looks like a URL in text, for webArgs to cut. It is
// not how a tool reads its URLs (promptURLs is Gemini CLI's way).
var urlIn = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>()]+`)

// pathOf is a file tool's target: the first of fields present, resolved
// against dir. ask is set when another candidate field (any of fields or
// pathFields) names a different path, or holds something that is not a
// string: which of them the tool uses is not known.
func pathOf(in map[string]any, dir string, fields ...string) (target, ask string) {
	var found []string // "field=path", for the reason
	seen := map[string]bool{}
	for _, f := range append(fields, pathFields...) {
		if seen[f] {
			continue
		}
		seen[f] = true
		v, ok := in[f]
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString {
			found = append(found, fmt.Sprintf("%s=(not a string)", f))
			ask = "x"
			continue
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		p := resolve(dir, s)
		found = append(found, f+"="+p)
		switch {
		case target == "":
			target = p
		case p != target:
			ask = "x"
		}
	}
	if ask != "" {
		sort.Strings(found)
		ask = "the tool input names more than one path (" + strings.Join(found, ", ") +
			"); the tool may use any of them, so a person decides"
	}
	return target, ask
}

// globTarget is the target of a glob search: the pattern as written,
// resolved against base (the tool's path, else its working directory).
// A grant on a directory does not cover it unless it covers the pattern.
func globTarget(base, pattern string) string {
	switch {
	case pattern == "":
		return base
	case path.IsAbs(pattern), pattern == "~", strings.HasPrefix(pattern, "~/"):
		return path.Clean(pattern)
	case base == "":
		return path.Clean(pattern)
	}
	return path.Join(base, pattern)
}

// inDir is ev with its working directory moved to the tool's own, when
// its input names one in field (Codex's workdir, Gemini's directory):
// relative paths resolve there, and the card names it.
func inDir(ev Event, field string) Event {
	if w, ok := ev.ToolInput[field].(string); ok && strings.TrimSpace(w) != "" {
		ev.Cwd = resolve(ev.Cwd, w)
	}
	return ev
}
