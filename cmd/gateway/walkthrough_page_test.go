package main

// The pages' side of the walkthroughs (walkthrough_test.go): the blocks a
// page marks "<!-- walkthrough: NAME -->", and how a printed value is
// compared with what the product printed.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// pageBlock is a fenced block a page marks as part of a walkthrough.
type pageBlock struct {
	file string // relative to the repository: "README.md"
	name string // the marker's name: "tour/ask"
	line int    // of the block's first line inside the fence
	lang string
	text string // the lines inside the fence, the fence's indentation removed
}

var walkMarkerRE = regexp.MustCompile(`^\s*<!--\s*walkthrough:\s*(\S+)\s*-->\s*$`)

// pageBlocks returns the marked blocks of a page. The marker stands on one
// of the two lines above the opening fence. A marker with no fence below
// it is an error: the walkthrough would silently check nothing.
func pageBlocks(file, text string) ([]pageBlock, error) {
	lines := strings.Split(text, "\n")
	var out []pageBlock
	for i, l := range lines {
		m := walkMarkerRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		open := -1
		for j := i + 1; j < len(lines) && j <= i+2; j++ {
			if fenceRE.MatchString(lines[j]) {
				open = j
				break
			}
		}
		if open < 0 {
			return nil, fmt.Errorf("%s:%d: walkthrough marker %q has no fenced block below it", file, i+1, m[1])
		}
		f := fenceRE.FindStringSubmatch(lines[open])
		indent, fence := f[1], f[2]
		b := pageBlock{file: file, name: m[1], line: open + 2, lang: f[3]}
		closed := false
		for j := open + 1; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), fence) {
				closed = true
				break
			}
			b.text += strings.TrimPrefix(lines[j], indent) + "\n"
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: walkthrough block %q is not closed", file, open+1, m[1])
		}
		for _, o := range out {
			if o.name == b.name {
				return nil, fmt.Errorf("%s:%d: walkthrough block %q marked twice", file, open+1, b.name)
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// readPageBlock finds the block name in the page file of the repository.
func readPageBlock(root, file, name string) (pageBlock, error) {
	text, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return pageBlock{}, err
	}
	blocks, err := pageBlocks(file, string(text))
	if err != nil {
		return pageBlock{}, err
	}
	for _, b := range blocks {
		if b.name == name {
			return b, nil
		}
	}
	return pageBlock{}, fmt.Errorf("%s has no block marked <!-- walkthrough: %s -->", file, name)
}

// display is how a page shows a value that differs from run to run (a
// port, a temporary home): what the product printed is rewritten before
// it is compared.
type display struct {
	re  *regexp.Regexp
	old string
	new string
}

func applyDisplays(ds []display, s string) string {
	for _, d := range ds {
		if d.re != nil {
			s = d.re.ReplaceAllLiteralString(s, d.new)
		} else if d.old != "" {
			s = strings.ReplaceAll(s, d.old, d.new)
		}
	}
	return s
}

// shownMatches reports whether printed, what the product printed, is what
// the page shows: line by line, where "…" on the page stands for any text
// (the page's own way of eliding a token or a time). JSON the product
// printed is compared compact, key order kept (jq pretty-prints; the page
// shows one line).
func shownMatches(shown, printed string) bool {
	shown = strings.TrimRight(shown, "\n")
	printed = strings.TrimRight(printed, "\n")
	if c, ok := compactJSON(printed); ok {
		printed = c
	}
	var re strings.Builder
	re.WriteString(`(?s)\A`)
	for i, part := range strings.Split(shown, "…") {
		if i > 0 {
			re.WriteString(`.*?`)
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String()).MatchString(printed)
}

// compactJSON compacts a stream of JSON values, one a line; ok is false
// when s is not such a stream.
func compactJSON(s string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var lines []string
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", false
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", false
		}
		lines = append(lines, b.String())
	}
	if len(lines) == 0 {
		return "", false
	}
	return strings.Join(lines, "\n"), true
}

// diffLines says where shown and printed part, for a failure message.
func diffLines(shown, printed string) string {
	return fmt.Sprintf("the page shows:\n%s\nthe product printed:\n%s", indent(shown), indent(printed))
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "\t(nothing)"
	}
	return "\t" + strings.ReplaceAll(s, "\n", "\n\t")
}
