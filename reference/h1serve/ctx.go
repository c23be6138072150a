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
	funcs []*afterFunc // registered by AfterFunc, not yet stopped or run
	armed bool
	// first and room hold the usual one or two registrations without an
	// allocation of their own (issue #14: a map of them cost three).
	first afterFunc
	room  [2]*afterFunc
}

type afterFunc struct {
	x *reqCtx
	f func()
}

// stop is the stop function of a registration: true if it had not run.
func (a *afterFunc) stop() bool {
	x := a.x
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, b := range x.funcs {
		if b == a {
			x.funcs = append(x.funcs[:i], x.funcs[i+1:]...)
			return true
		}
	}
	return false
}

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
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &x.first
	if a.f != nil {
		a = &afterFunc{}
	}
	a.x, a.f = x, f
	if x.funcs == nil {
		x.funcs = x.room[:0]
	}
	x.funcs = append(x.funcs, a)
	arm := !x.armed
	x.armed = true
	x.mu.Unlock()
	if arm {
		x.c.watch(x)
	}
	return a.stop
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
	for _, a := range funcs {
		go a.f()
	}
}

func (x *reqCtx) String() string { return "h1serve.requestContext" }
