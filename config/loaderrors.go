// What Load says when a config is wrong: every problem at once, each
// naming its key (Error, KeyError).

package config

import (
	"fmt"
	"strings"
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
