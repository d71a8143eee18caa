// A registered section's secrets, found by its type: a string field
// tagged `toml:"-"` is a secret, and the sibling field named like it with
// "Env" after holds its *_env key, the variable it is read from. Config
// reads, lists and redacts them itself, so a section cannot forget one.

package config

import (
	"fmt"
	"reflect"
	"strings"
)

// secretField is where a section's secret and the name of its variable
// stand in its struct.
type secretField struct {
	value, env []int // reflect.Value.FieldByIndex paths
}

// secretFields are the secrets of t, a section's struct type, with those
// of the structs it embeds; a secret without its *_env sibling is an
// error.
func secretFields(t reflect.Type) ([]secretField, error) {
	var out []secretField
	for _, f := range reflect.VisibleFields(t) {
		if f.Tag.Get("toml") != "-" || f.Type.Kind() != reflect.String || !f.IsExported() {
			continue
		}
		env, ok := t.FieldByName(f.Name + "Env")
		if !ok || env.Type.Kind() != reflect.String || !strings.HasSuffix(env.Tag.Get("toml"), "_env") {
			return nil, fmt.Errorf("secret field %s has no %sEnv field with a *_env key naming its variable", f.Name, f.Name)
		}
		out = append(out, secretField{value: f.Index, env: env.Index})
	}
	return out, nil
}

// sectionSecrets are the secrets of v, whose type AddSections checked.
func sectionSecrets(v Section) []secretField {
	fields, err := secretFields(reflect.TypeOf(v).Elem())
	if err != nil {
		panic("config: " + err.Error()) // AddSections refused such a section
	}
	return fields
}

// readSecrets sets each of v's secrets whose variable is named from getenv.
func readSecrets(v Section, getenv func(string) string) {
	rv := reflect.ValueOf(v).Elem()
	for _, f := range sectionSecrets(v) {
		if name := rv.FieldByIndex(f.env).String(); name != "" {
			rv.FieldByIndex(f.value).SetString(getenv(name))
		}
	}
}

// setSecrets are the values of v's secrets that are set.
func setSecrets(v Section) []string {
	rv := reflect.ValueOf(v).Elem()
	var out []string
	for _, f := range sectionSecrets(v) {
		if s := rv.FieldByIndex(f.value).String(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// redactedSection is a copy of v in which every set secret reads
// "[redacted]", sharing no slice or map with it.
func redactedSection(v Section) Section {
	rv := reflect.ValueOf(v).Elem()
	cp := reflect.New(rv.Type())
	cp.Elem().Set(deepCopy(rv))
	for _, f := range sectionSecrets(v) {
		s := cp.Elem().FieldByIndex(f.value)
		s.SetString(redact(s.String()))
	}
	return cp.Interface().(Section)
}

// deepCopy is v with its exported slices, maps and pointers copied, at
// every depth.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	}
	return v
}
