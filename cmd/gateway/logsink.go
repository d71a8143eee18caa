package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// The process log of `gateway serve` writes a line per request at info
// level; a system call per line cost as much as a tenth of a decided-now
// request. Lines are collected and written together instead: at the latest
// logFlushEvery after the first, when logFlushBytes wait, at once for a
// record at warn level or above, and at exit. A crash (kill -9) can lose at
// most the last logFlushEvery of info and debug lines.
const (
	logFlushEvery = 100 * time.Millisecond
	logFlushBytes = 64 << 10
)

// logSink is a buffered writer flushed by time, size and on demand.
type logSink struct {
	w     io.Writer
	mu    sync.Mutex
	buf   []byte
	timer *time.Timer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if len(s.buf) >= logFlushBytes {
		s.flushLocked()
	} else if s.timer == nil {
		s.timer = time.AfterFunc(logFlushEvery, s.Flush)
	}
	return len(p), nil
}

// Flush writes what is waiting.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *logSink) flushLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if len(s.buf) > 0 {
		s.w.Write(s.buf) // nowhere to report a failure to write the log
		s.buf = s.buf[:0]
	}
}

// flushingHandler writes the sink out after every record at warn level or
// above, so problems reach the log at once.
type flushingHandler struct {
	slog.Handler
	sink *logSink
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.sink.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(as), h.sink}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.sink}
}

// bufferLog returns the writer a logger should write to and the function
// that flushes it: buffered for a file or a terminal, as is for anything
// else (a test's buffer is read while the server runs).
func bufferLog(w io.Writer) (io.Writer, *logSink) {
	if _, ok := w.(*os.File); !ok {
		return w, nil
	}
	s := &logSink{w: w}
	return s, s
}
