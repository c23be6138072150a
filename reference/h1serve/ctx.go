package h1serve

import (
	"context"
	"sync"
	"time"
)

// reqCtx is a request's context. It is cancelled when the handler
// returns, when a write to the client fails, and when the client goes
// away while someone is waiting on it: Done and AfterFunc (which
// context.WithCancel and context.AfterFunc use on it, so they start no
// goroutine of their own) arm the connection's background read; a
// handler that never waits costs no read, goroutine or syscall.
type reqCtx struct {
	context.Context // the connection's context, for Value and Deadline
	c               *conn

	mu    sync.Mutex
	done  chan struct{}
	err   error
	funcs map[*afterFunc]struct{}
	armed bool
}

type afterFunc struct{ f func() }

func (x *reqCtx) Done() <-chan struct{} {
	x.mu.Lock()
	if x.done == nil {
		x.done = make(chan struct{})
		if x.err != nil {
			close(x.done)
		}
	}
	d := x.done
	arm := x.err == nil && !x.armed
	x.armed = x.armed || arm
	x.mu.Unlock()
	if arm {
		x.c.watch(x)
	}
	return d
}

func (x *reqCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

func (x *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// AfterFunc is what context.AfterFunc and context.WithCancel use on a
// parent that has it: f runs in its own goroutine once x is cancelled.
func (x *reqCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if x.funcs == nil {
		x.funcs = map[*afterFunc]struct{}{}
	}
	x.funcs[a] = struct{}{}
	arm := !x.armed
	x.armed = true
	x.mu.Unlock()
	if arm {
		x.c.watch(x)
	}
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		_, ok := x.funcs[a]
		delete(x.funcs, a)
		return ok
	}
}

// cancel ends x with err (once).
func (x *reqCtx) cancel(err error) {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.err = err
	if x.done != nil {
		close(x.done)
	}
	funcs := x.funcs
	x.funcs = nil
	x.mu.Unlock()
	for a := range funcs {
		go a.f()
	}
}

func (x *reqCtx) String() string { return "h1serve.requestContext" }
