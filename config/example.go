package config

import (
	_ "embed"
	"strings"
)

// Example is the commented example configuration of config's own tables:
// every key with its default or an example value. `gateway config
// example` prints it with the registered sections' tables (ExampleWith),
// and a test keeps it loading and complete.
//
//go:embed gateway.example.toml
var Example string

// ExampleWith is Example with each section's Example table, in the order
// given, before the [hooks.*] tables.
func ExampleWith(specs ...SectionSpec) string {
	var b strings.Builder
	for _, s := range specs {
		if s.Example != "" {
			b.WriteString(strings.TrimRight(s.Example, "\n") + "\n\n")
		}
	}
	i := strings.Index(Example, "\n[hooks.")
	if i < 0 {
		return Example + "\n" + b.String()
	}
	return Example[:i+1] + b.String() + Example[i+1:]
}
