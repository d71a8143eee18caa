//go:build unix

package storage

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The WAL-index header, as SQLite keeps it at the start of the "-shm" file
// of a database in WAL mode (https://www.sqlite.org/walformat.html, "The
// WAL-Index Format"): two copies of a 48-byte header, native byte order.
// A writer updates the second copy, then the first, before its COMMIT
// returns; the header holds the index of the last committed frame
// (mxFrame), the WAL's salts and running checksums, so every commit by any
// process changes it, and a header that reads the same as before means
// nothing was committed in between.
const (
	walHdrSize      = 48
	walIndexVersion = 3007000 // iVersion of every WAL-index SQLite writes
	walShmMinSize   = 2 * walHdrSize
	walMapSize      = 4096 // one page: both header copies and the checkpoint info
)

// walHeader is a snapshot of one header copy.
type walHeader [walHdrSize / 4]uint32

// walIndex is a read-only shared mapping of a database's -shm file. Reading
// the header costs a dozen loads, against a query for PRAGMA data_version,
// which is what makes it worth having on the decision path.
type walIndex struct {
	mem []byte
}

// openWALIndex maps the first page of path+"-shm". It returns nil when the
// file is missing, too short or not a WAL-index SQLite would write; the
// caller then asks SQLite instead. The caller must keep a connection to the
// database open for as long as it uses the mapping: SQLite removes the -shm
// file only when the last connection of the last process closes.
func openWALIndex(path string) *walIndex {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < walMapSize {
		return nil // mapped bytes past the end of a file fault when read
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walMapSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	w := &walIndex{mem: mem}
	if _, ok := w.header(); !ok {
		w.close()
		return nil
	}
	return w
}

// header reads the header. ok is false when the two copies differ (a
// writer is between them) or the header is not initialised; the caller
// must then treat the database as changed.
func (w *walIndex) header() (h walHeader, ok bool) {
	var second walHeader
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[4*i])))
	}
	for i := range second {
		second[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[walHdrSize+4*i])))
	}
	// iVersion is word 0; isInit is the byte at offset 12.
	isInit := (*[walHdrSize]byte)(unsafe.Pointer(&h))[12] != 0
	return h, h == second && h[0] == walIndexVersion && isInit
}

func (w *walIndex) close() {
	if w != nil && w.mem != nil {
		syscall.Munmap(w.mem)
		w.mem = nil
	}
}
