// What Load says when a config is wrong: every problem at once, each
// naming its key (Error, KeyError).

package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is every problem found in a configuration, each naming its key.
// errors.Is and errors.As see through it to each problem.
type Error struct {
	File     string  // the file read, "" when none
	Problems []error // section by section, unknown keys first
}

// Error lists the problems one per line, at most maxShown of them, after the file name.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("config")
	}
	if len(e.Problems) == 1 {
		b.WriteString(": ")
		b.WriteString(e.Problems[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, ": %d problems:", len(e.Problems))
	for i, p := range e.Problems {
		if i == maxShown {
			fmt.Fprintf(&b, "\n\t(and %d more)", len(e.Problems)-maxShown)
			break
		}
		b.WriteString("\n\t")
		b.WriteString(p.Error())
	}
	return b.String()
}

// maxShown bounds Error's text; Problems keeps them all.
const maxShown = 100

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Problems }

// KeyError is one problem with one key ("agents[0].token_env"), or with an
// environment variable Load reads directly ("METNOS_JUDGE_THRESHOLD").
type KeyError struct {
	Key string
	Err error
}

// Error reads "key: problem".
func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the underlying error (policy.ErrUnknownCapability, …).
func (e *KeyError) Unwrap() error { return e.Err }

type problems []error

func (p *problems) add(key, format string, args ...any) {
	*p = append(*p, &KeyError{Key: key, Err: fmt.Errorf(format, args...)})
}

func (p *problems) wrap(key string, err error) {
	*p = append(*p, &KeyError{Key: key, Err: err})
}

var mismatchRE = regexp.MustCompile(`^toml: line ([0-9]+) \(last key "([^"]*)"\): (.*)$`)

// tomlError makes a decoder error say where, key first when there is one:
// "server.listen: line 2: incompatible types: …". Type mismatches come
// back as plain errors carrying the text "toml: line N (last key …): …".
func tomlError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		if pe.LastKey != "" {
			return fmt.Errorf("line %d, column %d: syntax error after key %s: %s", pe.Position.Line, pe.Position.Col, pe.LastKey, pe.Message)
		}
		return fmt.Errorf("line %d, column %d: syntax error: %s", pe.Position.Line, pe.Position.Col, pe.Message)
	}
	if m := mismatchRE.FindStringSubmatch(err.Error()); m != nil {
		return &KeyError{Key: m[2], Err: fmt.Errorf("line %s: %s", m[1], m[3])}
	}
	return errors.New(strings.TrimPrefix(err.Error(), "toml: "))
}

var lineRE = regexp.MustCompile(`^line [0-9]+: `)

// withoutLine is err without the line a KeyError of tomlError names.
func withoutLine(err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return &KeyError{Key: ke.Key, Err: errors.New(lineRE.ReplaceAllString(ke.Err.Error(), ""))}
	}
	return err
}
