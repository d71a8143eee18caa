package vaglio

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Decision log buffering. A line per decision written with its own system
// call cost about a tenth of a decision; lines are instead collected in
// memory and written together, at the latest logFlushEvery after the first
// of them, when logFlushBytes are waiting, and on Close. A crash (kill -9)
// can lose at most the last logFlushEvery of lines; every line that is
// written is whole, and lines keep their order.
const (
	logFlushEvery = 100 * time.Millisecond
	logFlushBytes = 64 << 10
)

// logWriter appends lines to monthly files under dir. It is safe for
// concurrent use.
type logWriter struct {
	dir   string
	onErr func(error) // reports write failures; never sees a line's content
	month atomic.Pointer[monthName]

	mu      sync.Mutex
	buf     []byte // lines for bufName, not yet written
	bufName string
	timer   *time.Timer // pending flush; nil when buf is empty
	closed  bool

	file *os.File // the month's log, kept open between flushes
	name string
	info os.FileInfo // of file, to notice a deleted or rotated file
}

// add queues line (ending in '\n') for the file name.
func (w *logWriter) add(name string, line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bufName != name && len(w.buf) > 0 {
		w.flushLocked() // the month changed: the old month's lines go first
	}
	w.bufName = name
	w.buf = append(w.buf, line...)
	switch {
	case w.closed || len(w.buf) >= logFlushBytes:
		w.flushLocked()
	case w.timer == nil:
		w.timer = time.AfterFunc(logFlushEvery, w.flush)
	}
}

// flush writes what is waiting.
func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

// close writes what is waiting and closes the file; later lines are written
// at once, one by one.
func (w *logWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	w.closed = true
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
}

// flushLocked writes buf with a single write in append mode, so lines are
// never split even if another process appends to the same file. The file
// stays open between flushes; it is reopened when the month changes or a
// write fails (a rotated or deleted file is recreated). w.mu must be held.
func (w *logWriter) flushLocked() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if len(w.buf) == 0 {
		return
	}
	if err := w.write(w.bufName, w.buf); err != nil && w.onErr != nil {
		w.onErr(err)
	}
	w.buf = w.buf[:0]
	if cap(w.buf) > 4*logFlushBytes {
		w.buf = nil // a burst should not pin its memory
	}
}

func (w *logWriter) write(name string, data []byte) error {
	if w.file != nil {
		if st, err := os.Stat(name); w.name != name || err != nil || !os.SameFile(st, w.info) {
			w.file.Close()
			w.file = nil
		}
	}
	if w.file == nil {
		if err := os.MkdirAll(w.dir, logDirMode); err != nil {
			return err
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, logFileMode)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		w.file, w.name, w.info = f, name, st
	}
	if _, err := w.file.Write(data); err != nil {
		w.file.Close()
		w.file = nil
		return err
	}
	if w.closed {
		w.file.Close()
		w.file = nil
	}
	return nil
}

// logName is the month's file for a line written at ts.
func logName(dir string, ts time.Time) string {
	return filepath.Join(dir, ts.UTC().Format("2006-01")+".jsonl")
}

// nameFor is logName for w's directory, computed once a month.
func (w *logWriter) nameFor(ts time.Time) string {
	y, m, _ := ts.UTC().Date()
	month := y*12 + int(m)
	if c := w.month.Load(); c != nil && c.month == month {
		return c.name
	}
	c := &monthName{month: month, name: logName(w.dir, ts)}
	w.month.Store(c)
	return c.name
}

// monthName caches the file name of one month.
type monthName struct {
	month int
	name  string
}
