package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLogSink: info lines wait (at most logFlushEvery), a warning writes
// everything at once in order, and flushLog writes the rest at exit.
func TestLogSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := newLogger(f, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	log.Info("first", "request_id", "r1")
	log.Warn("problem")
	got := read()
	if !strings.Contains(got, `"first"`) || !strings.Contains(got, `"problem"`) || strings.Index(got, "first") > strings.Index(got, "problem") {
		t.Fatalf("after a warning the log holds:\n%s", got)
	}
	log.Info("later")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(read(), "later") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(read(), "later") {
		t.Fatal("an info line was never written")
	}
	log.With("k", "v").Info("last")
	flushLog(log)
	if !strings.Contains(read(), `"last"`) {
		t.Fatal("flushLog left a line behind")
	}
}

// TestLogSink_BufferUnbuffered: a logger on anything but a file writes
// each line at once (tests read their buffers while the server runs).
func TestLogSink_BufferUnbuffered(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "text", "info")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("now")
	if !strings.Contains(buf.String(), "now") {
		t.Fatal("line not written at once")
	}
	if _, ok := log.Handler().(flushingHandler); ok {
		t.Fatal("a buffer got a buffered handler")
	}
}
