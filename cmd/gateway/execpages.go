// Releasing the executable's mapped pages once `gateway serve` has started.

package main

import (
	"log/slog"
	"time"
)

// releaseExecAfter is how long after the listener is up serve releases the
// executable's mapped pages (releaseExecutablePages): start-up's one-time
// code and data (configuration, migrations, the first requests) have run
// by then, so what maps again afterwards is what the running gateway uses.
const releaseExecAfter = 2 * time.Second

// releaseExecutableLater releases the executable's mapped pages
// releaseExecAfter from now, unless stop is called first.
func releaseExecutableLater(log *slog.Logger) (stop func() bool) {
	return time.AfterFunc(releaseExecAfter, func() { releaseExecutableNow(log) }).Stop
}

// releaseExecutableNow releases the executable's mapped pages, logging
// what it released or why it could not.
func releaseExecutableNow(log *slog.Logger) {
	n, err := releaseExecutablePages()
	if err != nil {
		log.Warn("releasing the executable's mapped pages", "err", err)
		return
	}
	log.Debug("released the executable's mapped pages", "bytes", n)
}
