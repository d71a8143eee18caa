package config

import _ "embed"

// Example is the commented example configuration: every key with its
// default or an example value. `gateway config example` prints it, and a
// test keeps it loading and complete.
//
//go:embed gateway.example.toml
var Example string
