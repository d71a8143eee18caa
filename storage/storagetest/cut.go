package storagetest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Cuttable stands between the tests and the PostgreSQL server, on
// loopback, so a test can take the database away as a stopped server or a
// failed network would (Cut: connections refused, open ones broken) and
// give it back (Restore), while the real client talks to the real server.
type Cuttable struct {
	tb     testing.TB
	target string // host:port of the server
	addr   string // host:port of the proxy

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	// cuts counts the Cut calls. A pipe forwards nothing once it moved
	// past the count the pipe began under: Cut closes the open
	// connections one after the other, and a query on one it has not
	// closed yet must not be answered after another call has seen the
	// cut (the outage would seem to end before it began).
	cuts atomic.Int64
}

// CutDSN returns dsn (of the PostgreSQL test server, as FreshSchema
// gives) rewritten to go through a Cuttable, and that Cuttable. It is
// closed when the test ends.
func CutDSN(tb testing.TB, dsn string) (string, *Cuttable) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		tb.Fatalf("storagetest: CutDSN wants a postgres:// URL with a host, got one that is not")
	}
	c := &Cuttable{tb: tb, target: u.Host, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	c.Restore()
	c.addr = c.ln.Addr().String()
	u.Host = c.addr
	tb.Cleanup(func() {
		c.Cut()
		c.wg.Wait()
	})
	return u.String(), c
}

// Cut refuses new connections (the port is closed) and breaks every open
// one.
func (c *Cuttable) Cut() {
	c.cuts.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for conn := range c.conns {
		conn.Close()
	}
}

// Restore opens the port again (the same one).
func (c *Cuttable) Restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		c.tb.Fatalf("storagetest: listen on %s again: %v", c.addr, err)
	}
	c.ln = ln
	c.wg.Go(func() { c.accept(ln) })
}

func (c *Cuttable) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return // closed by Cut
		}
		out, err := net.Dial("tcp", c.target)
		if err != nil {
			in.Close()
			continue
		}
		gen := c.cuts.Load()
		if !c.track(ln, in, out) {
			in.Close()
			out.Close()
			continue
		}
		c.wg.Go(func() { c.pipe(in, out, gen) })
	}
}

// track records a pair of connections unless ln was cut meanwhile.
func (c *Cuttable) track(ln net.Listener, in, out net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != ln {
		return false
	}
	c.conns[in], c.conns[out] = struct{}{}, struct{}{}
	return true
}

// pipe copies both ways until either side closes or a Cut comes after
// gen, then closes both.
func (c *Cuttable) pipe(in, out net.Conn, gen int64) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		c.copyUncut(dst, src, gen)
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	in.Close()
	out.Close()
	<-done
	c.mu.Lock()
	delete(c.conns, in)
	delete(c.conns, out)
	c.mu.Unlock()
}

// copyUncut copies src to dst until either fails or a Cut comes after
// gen; what src sent after that Cut is dropped, not forwarded.
func (c *Cuttable) copyUncut(dst, src net.Conn, gen int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if c.cuts.Load() != gen {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
