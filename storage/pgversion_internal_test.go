package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPGVersions_ReadBarrier: a read in flight when a caller arrives never
// serves it; the next read does, and serves everyone who came meanwhile;
// a failed read fails its waiters; a read that started after a caller
// arrived serves it without another.
func TestPGVersions_ReadBarrier(t *testing.T) {
	type call struct {
		started chan *pgRead // a read began: the test answers it
		answer  chan error   // what the read returns
	}
	c := call{started: make(chan *pgRead), answer: make(chan error)}
	p := &pgVersions{query: func(ctx context.Context, r *pgRead) error {
		c.started <- r
		return <-c.answer
	}}
	get := func() chan int64 {
		out := make(chan int64, 1)
		arrived := time.Now()
		go func() {
			n, err := p.counter(context.Background(), 0, arrived, nil)
			if err != nil {
				n = -1
			}
			out <- n
		}()
		return out
	}
	first := get()
	r1 := <-c.started // the first caller's read is in flight
	second := get()   // arrives during it
	third := get()
	// Wait until both joined the next read (they register before waiting).
	for {
		p.mu.Lock()
		n := p.next
		p.mu.Unlock()
		if n != nil {
			break
		}
	}
	r1.vals[0] = 1
	c.answer <- nil
	if got := <-first; got != 1 {
		t.Fatalf("first caller: %d, want 1", got)
	}
	r2 := <-c.started // the next read serves the two who came during r1
	if !r2.started.After(r1.started) {
		t.Fatal("the second read started before the first")
	}
	select {
	case n := <-second:
		t.Fatalf("a caller who arrived during a read was answered by it: %d", n)
	default:
	}
	r2.vals[0] = 2
	c.answer <- nil
	if a, b := <-second, <-third; a != 2 || b != 2 {
		t.Fatalf("callers who came during the first read: %d, %d; want 2, 2", a, b)
	}

	// A caller that arrived before the last read started is served by it,
	// without a read of its own.
	if n, err := p.counter(context.Background(), 0, r2.started.Add(-time.Nanosecond), nil); err != nil || n != 2 {
		t.Fatalf("served by the last read: %d, %v", n, err)
	}

	// A failed read fails its waiters; the next caller reads again.
	failed := get()
	<-c.started
	c.answer <- errors.New("connection reset")
	if n := <-failed; n != -1 {
		t.Fatalf("a failed read answered %d", n)
	}
	after := get()
	r4 := <-c.started
	r4.vals[0] = 4
	c.answer <- nil
	if n := <-after; n != 4 {
		t.Fatalf("after a failure: %d, want 4", n)
	}
}

// TestArrived: the time Arrived records is what arrival reads, through
// contexts derived from it; without it arrival is now; the context's other
// values, deadline and cancellation pass through.
func TestArrived(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	ctx := Arrived(parent, at)
	child, stop := context.WithTimeout(context.WithValue(ctx, struct{ k int }{1}, 2), time.Hour)
	defer stop()
	if got, _ := arrival(child); !got.Equal(at) {
		t.Fatalf("arrival = %v, want %v", got, at)
	}
	if got := child.Value(key{}); got != "v" {
		t.Fatalf("the parent's value = %v, want v", got)
	}
	before := time.Now()
	if got, _ := arrival(parent); got.Before(before) {
		t.Fatalf("arrival without Arrived = %v, before now (%v)", got, before)
	}
	cancel()
	<-child.Done()
	if child.Err() != context.Canceled {
		t.Fatalf("child.Err() = %v, want canceled", child.Err())
	}
}
