//go:build !unix

package storage

// walHeader and walIndex have no shared mapping here: GrantsVersion asks
// SQLite on every call.
type walHeader [12]uint32

type walIndex struct{}

func openWALIndex(string) *walIndex { return nil }

func (w *walIndex) header() (walHeader, bool) { return walHeader{}, false }

func (w *walIndex) close() {}
