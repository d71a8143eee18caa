//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// The bits of a /proc/PID/pagemap entry read here
// (Documentation/admin-guide/mm/pagemap.rst).
const (
	pagemapPresent  = 1 << 63
	pagemapSwapped  = 1 << 62
	pagemapFilePage = 1 << 61 // a page of the file (or shared anonymous memory)
)

// releaseExecutablePages unmaps the pages of the executable's private,
// read-only mappings (its code and read-only data: type descriptors,
// strings, the function tables) and keeps them from being mapped again a
// huge page at a time. Linux maps a file's cached pages by whole large
// folios, up to 2 MiB with one page-table entry (FilePmdMapped), so
// nearly all of a 37 MB executable counts in the RSS soon after start,
// used or not. After this, a page maps again when the gateway touches it:
// a minor fault from the page cache, once, never a read from disk, and
// never again while it stays mapped.
//
// Unmapping clean file pages loses nothing: it is what the kernel's
// reclaim does to them under memory pressure. A mapping with a page that
// is no longer the file's (a debugger's breakpoint, a uprobe: a private
// copy) is left alone, since unmapping would discard it; writable
// mappings (.data, .bss) and anonymous memory are never touched. It
// returns the bytes of the mappings released.
func releaseExecutablePages() (int64, error) {
	self, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	maps, err := self.ProcMaps()
	if err != nil {
		return 0, fmt.Errorf("the mappings: %w", err)
	}
	// The executable is the file mapped where this function's code is
	// (its device and inode as the mappings give them: stat's can differ,
	// on btrfs for one).
	pc, _, _, _ := runtime.Caller(0)
	var exe *procfs.ProcMap
	for _, m := range maps {
		if m.StartAddr <= pc && pc < m.EndAddr {
			exe = m
		}
	}
	if exe == nil || exe.Inode == 0 {
		return 0, fmt.Errorf("no file mapped at the code's address %#x", pc)
	}
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, err
	}
	defer pagemap.Close()
	var released int64
	for _, m := range maps {
		if m.Dev != exe.Dev || m.Inode != exe.Inode || m.Perms.Write || !m.Perms.Private {
			continue
		}
		clean, err := fileBacked(pagemap, m.StartAddr, m.EndAddr)
		if err != nil {
			return released, err
		}
		if !clean {
			continue
		}
		for _, advice := range []int{unix.MADV_NOHUGEPAGE, unix.MADV_DONTNEED} {
			if err := madvise(m.StartAddr, m.EndAddr-m.StartAddr, advice); err != nil {
				return released, fmt.Errorf("madvise %#x-%#x: %w", m.StartAddr, m.EndAddr, err)
			}
		}
		released += int64(m.EndAddr - m.StartAddr)
	}
	return released, nil
}

// fileBacked reports whether every page of [start, end) that is present
// or swapped out is the file's own page, none a private copy.
func fileBacked(pagemap *os.File, start, end uintptr) (bool, error) {
	page := uintptr(os.Getpagesize())
	entries := make([]byte, (end-start)/page*8)
	if _, err := pagemap.ReadAt(entries, int64(start/page*8)); err != nil {
		return false, fmt.Errorf("pagemap of %#x-%#x: %w", start, end, err)
	}
	for i := 0; i < len(entries); i += 8 {
		e := binary.NativeEndian.Uint64(entries[i:])
		if e&(pagemapPresent|pagemapSwapped) != 0 && e&pagemapFilePage == 0 {
			return false, nil
		}
	}
	return true, nil
}

// madvise is the system call on an address range the process did not
// allocate from Go (its own executable's mappings), so it takes the
// addresses as they are in /proc/self/maps.
func madvise(addr, length uintptr, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
