// Command gateway is the approval gateway: the server (`gateway serve`) and
// the command line that inspects and edits its policy and grants.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/metnos/gateway/sandbox"
	_ "time/tzdata" // server.timezone works on machines without a zone database (the distroless image)
)

func main() {
	sandbox.Main() // `gateway run`'s re-executed init: enters the sandbox and never returns
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
