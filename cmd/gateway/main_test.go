package main

import (
	"os"
	"testing"

	"github.com/metnos/gateway/sandbox"
)

// TestMain lets this test binary be `gateway run`'s re-executed init, as
// the gateway binary is: the tests call run, which starts os.Executable.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
