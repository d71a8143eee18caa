package storage

import (
	"context"
	"database/sql/driver"
	"fmt"
	"os"
	"sync"
	"time"
)

// countedConnector opens the pool's SQLite connections and counts the open
// ones, so Close can wait for the last one to close. database/sql's
// DB.Close returns while a connection is still being opened for a caller
// that had waited for one (its opener goroutine closes that connection
// when it finds the pool closed, later), and the last connection to close
// is the one that checkpoints and removes the WAL: `gateway migrate`
// wrote into its directory after it had returned.
type countedConnector struct {
	driver.Connector
	mu     sync.Mutex
	open   int
	closed chan struct{} // closed when open falls to 0, while wait waits
}

func (c *countedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.add(1)
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		c.add(-1)
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		c.add(-1)
		return nil, fmt.Errorf("storage: the SQLite driver's connection (%T) lacks a method database/sql uses", conn)
	}
	return &countedConn{sqliteConn: sc, done: func() { c.add(-1) }}, nil
}

func (c *countedConnector) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open += n
	if c.open == 0 && c.closed != nil {
		close(c.closed)
		c.closed = nil
	}
}

// wait returns once every connection opened has closed, or after at most
// d: a connection a caller still holds (rows never closed) must not hang
// the shutdown.
func (c *countedConnector) wait(d time.Duration) {
	c.mu.Lock()
	if c.open == 0 {
		c.mu.Unlock()
		return
	}
	closed := make(chan struct{})
	c.closed = closed
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
	}
}

// removeWAL makes SQLite remove a -wal file the pool's last connection
// left. The last connection to close checkpoints and removes the WAL, unless
// its closing checkpoint is interrupted: a query whose context ended just as
// it finished leaves the connection's interrupt flag set (the driver calls
// sqlite3_interrupt from another goroutine), and the flag holds until the
// next statement starts, so sqlite3_close's checkpoint stops at once. A
// fresh connection that reads the schema and closes is then the last one,
// with no flag set. Nothing to do when no -wal file is left.
func (c *countedConnector) removeWAL(path string) {
	if path == "" {
		return
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		return
	}
	conn, err := c.Connector.Connect(context.Background())
	if err != nil {
		return
	}
	defer conn.Close()
	if q, ok := conn.(driver.QueryerContext); ok {
		if rows, err := q.QueryContext(context.Background(), "SELECT count(*) FROM sqlite_master", nil); err == nil {
			rows.Close()
		}
	}
}

// sqliteConn is what database/sql uses of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// countedConn is a connection that tells its connector when it closes.
type countedConn struct {
	sqliteConn
	once sync.Once
	done func()
}

func (c *countedConn) Close() error {
	err := c.sqliteConn.Close()
	c.once.Do(c.done)
	return err
}
