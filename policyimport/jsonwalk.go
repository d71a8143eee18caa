package policyimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// walkJSON calls fn for every scalar of a JSON document (comments and
// trailing commas, as JSONC allows them, are read as space) with its key
// path (array indexes as decimal strings) and the line it ends on.
func walkJSON(data []byte, fn func(path []string, v any, line int)) error {
	data = stripTrailingCommas(stripComments(data))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	line := func() int { return 1 + bytes.Count(data[:max(dec.InputOffset()-1, 0)], []byte{'\n'}) }
	var walk func(path []string) error
	walk = func(path []string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			fn(path, tok, line())
			return nil
		}
		for i := 0; dec.More(); i++ {
			key := strconv.Itoa(i)
			if d == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ = k.(string)
			}
			if err := walk(append(path[:len(path):len(path)], key)); err != nil {
				return err
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(nil); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("not JSON: more after the document")
	}
	return nil
}

// stripComments blanks // and /* */ comments outside strings, keeping
// every newline so that lines still count.
func stripComments(data []byte) []byte {
	out := bytes.Clone(data)
	inStr := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			for ; i < len(out) && !(out[i] == '*' && i+1 < len(out) && out[i+1] == '/'); i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i+1 < len(out) {
				out[i], out[i+1] = ' ', ' '
				i++
			}
		}
	}
	return out
}

// stripTrailingCommas blanks a comma (outside strings) that only white
// space separates from the } or ] after it.
func stripTrailingCommas(data []byte) []byte {
	inStr := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ',':
			j := i + 1
			for j < len(data) && strings.IndexByte(" \t\r\n", data[j]) >= 0 {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				data[i] = ' '
			}
		}
	}
	return data
}
