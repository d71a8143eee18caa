// Sections other packages own: a top-level table ([chat]) that a
// package outside config decodes, checks and resolves itself, registered
// by name through LoadOptions.Sections.

package config

import (
	"fmt"
	"reflect"
	"regexp"
)

// Section is the value of a registered top-level table: a pointer to the
// owning package's struct, holding its defaults. The file's table is
// decoded straight over it by its toml tags, as config's own tables are,
// and a key the struct does not have is reported like any other unknown
// key, with its path and a suggestion. A string field tagged `toml:"-"`
// is a secret, which no key can set: the field named like it with "Env"
// after holds its *_env key, and config reads the variable that names
// (unless LoadOptions.SkipSecrets), lists the secret in Config.Secrets and
// hides it in Config.Redacted.
type Section interface {
	// Resolve runs after the file (whether or not it has the table) and
	// its secrets, and before Validate: it fills what an empty key means.
	Resolve()
	// Validate reports every problem, each naming its key within the
	// section ("token_env" is reported as "chat.token_env"); c is the
	// whole configuration, for checks across tables.
	Validate(p Problems, c *Config)
}

// SectionSpec registers a section: Name is its table ("chat"), New
// makes a value holding its defaults, Example is its table as `gateway
// config example` shows it (every key, commented).
type SectionSpec struct {
	Name    string
	New     func() Section
	Example string
}

// namedSection is a registered section's value in a Config.
type namedSection struct {
	name  string
	value Section
}

// Section is the value of the registered section name, nil when none is
// registered. The owning package asserts its own type:
// cfg.Section("chat").(*chat.Config).
func (c Config) Section(name string) Section {
	for _, s := range c.sections {
		if s.name == name {
			return s.value
		}
	}
	return nil
}

// SectionNames are the registered sections' names, in registration order.
func (c Config) SectionNames() []string {
	out := make([]string, len(c.sections))
	for i, s := range c.sections {
		out[i] = s.name
	}
	return out
}

var sectionNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// AddSections registers sections on c, each holding its defaults: Load
// does it with LoadOptions.Sections; a Config made with Default takes its
// sections here. A name config's own tables use, one registered twice,
// or a bad one is an error.
func (c *Config) AddSections(specs ...SectionSpec) error {
	own := ownTables()
	for _, spec := range specs {
		switch {
		case !sectionNameRE.MatchString(spec.Name):
			return fmt.Errorf("config: section name %q: want a-z, 0-9 and _, starting with a letter", spec.Name)
		case own[spec.Name] || c.Section(spec.Name) != nil:
			return fmt.Errorf("config: section %q registered twice", spec.Name)
		case spec.New == nil:
			return fmt.Errorf("config: section %q: no New", spec.Name)
		}
		v := spec.New()
		if t := reflect.TypeOf(v); t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return fmt.Errorf("config: section %q: New makes a %T, not a pointer to a struct", spec.Name, v)
		}
		if _, err := secretFields(reflect.TypeOf(v).Elem()); err != nil {
			return fmt.Errorf("config: section %q: %w", spec.Name, err)
		}
		c.sections = append(c.sections, namedSection{spec.Name, v})
	}
	return nil
}

// Problems is what a Section's Validate reports to: each problem names
// its key within the section, and Load reports it with the section's
// name in front.
type Problems struct {
	section string
	p       *problems
}

func (q Problems) key(k string) string {
	if k == "" {
		return q.section
	}
	return q.section + "." + k
}

// Add reports a problem with key ("chat_id", "approvers[2]").
func (q Problems) Add(key, format string, args ...any) { q.p.add(q.key(key), format, args...) }

// Wrap reports err as the problem with key.
func (q Problems) Wrap(key string, err error) { q.p.wrap(q.key(key), err) }

// Secret checks a *_env key and the secret it resolved to, as config's
// own are checked: a name that is not a variable's, or (with required,
// or a name given) an empty secret, naming the variable and never the
// value.
func (q Problems) Secret(key, envName, value string, required bool) {
	secret(q.p, q.key(key), envName, value, required)
}

// Language checks a language key against the catalogs.
func (q Problems) Language(key, v string) { language(q.p, q.key(key), v) }

// HTTPURL accepts an absolute http or https URL with a host.
func HTTPURL(s string) error { return httpURL(s) }

// Redact is s as a Section's Redacted shows a secret: "[redacted]" when
// set, "" when not.
func Redact(s string) string { return redact(s) }
