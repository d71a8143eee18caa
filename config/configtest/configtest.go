// Package configtest loads configurations in the tests of the packages
// that own a section (the messengers), as config's own tests do.
package configtest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
)

// Load writes body to a file of its own and loads it with sections
// registered and the environment e (HOME a temporary directory unless e
// sets it).
func Load(t testing.TB, body string, e map[string]string, sections ...config.SectionSpec) (config.Config, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir}
	for k, v := range e {
		env[k] = v
	}
	return config.LoadWith(path, true, func(k string) string { return env[k] }, config.LoadOptions{Sections: sections})
}

// Refused loads body and fails t unless it is refused with an error
// holding every one of want and none of secrets.
func Refused(t testing.TB, body string, e map[string]string, want []string, secrets []string, sections ...config.SectionSpec) {
	t.Helper()
	_, err := Load(t, body, e, sections...)
	if err == nil {
		t.Fatalf("accepted:\n%s", body)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%s", w, err)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("error shows a secret:\n%s", err)
		}
	}
}

// ExampleCovers fails t unless the section's example sets every key its
// value's toml tags name, those of the structs it embeds too.
func ExampleCovers(t testing.TB, spec config.SectionSpec) {
	t.Helper()
	var walk func(v reflect.Type)
	walk = func(v reflect.Type) {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		for i := range v.NumField() {
			f := v.Field(i)
			name := f.Tag.Get("toml")
			switch {
			case f.Anonymous && name == "":
				walk(f.Type)
				continue
			case name == "" || name == "-":
				continue
			}
			if !strings.Contains(spec.Example, "\n"+name+" =") {
				t.Errorf("[%s]'s example does not show %s", spec.Name, name)
			}
		}
	}
	walk(reflect.TypeOf(spec.New()))
}
