package h1serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A client that goes away while its handler waits on the request's
// context cancels it: through Done, and through context.WithCancel and
// context.AfterFunc (which use the context's AfterFunc).
func TestClientGoneCancels(t *testing.T) {
	for _, c := range []struct {
		name string
		wait func(ctx context.Context) <-chan struct{}
	}{
		{"Done", func(ctx context.Context) <-chan struct{} { return ctx.Done() }},
		{"WithCancel", func(ctx context.Context) <-chan struct{} {
			child, cancel := context.WithCancel(ctx)
			_ = cancel
			return child.Done()
		}},
		{"AfterFunc", func(ctx context.Context) <-chan struct{} {
			ch := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ch) })
			return ch
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			waiting, cancelled := make(chan struct{}), make(chan error, 1)
			addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				done := c.wait(r.Context())
				close(waiting)
				select {
				case <-done:
					cancelled <- r.Context().Err()
				case <-time.After(5 * time.Second):
					cancelled <- errors.New("not cancelled within 5s of the client leaving")
				}
			}))
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(nc, "GET / HTTP/1.1\r\n"+host+"\r\n")
			<-waiting
			nc.Close()
			if err := <-cancelled; !errors.Is(err, context.Canceled) {
				t.Errorf("the request's context after the client left: %v, want context.Canceled", err)
			}
		})
	}
}

// The background read that watches for the client leaving keeps what it
// reads: a request pipelined behind one whose handler waited on its
// context is served whole.
func TestWatcherKeepsPipelinedBytes(t *testing.T) {
	armed := make(chan struct{})
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			ctx := r.Context().(*reqCtx)
			done := ctx.Done() // arms the background read
			close(armed)
			// Barrier: the watcher has read the next request's first byte.
			cr := ctx.c.cr
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				cr.mu.Lock()
				held := len(cr.pend) > 0
				cr.mu.Unlock()
				if held {
					break
				}
				if time.Now().After(deadline) {
					t.Error("the background read never took the pipelined request's first byte")
					break
				}
			}
			select {
			case <-done:
				t.Errorf("context cancelled with the client still there: %v", r.Context().Err())
			default:
			}
		}
		io.WriteString(w, r.URL.Path)
	}))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	io.WriteString(nc, "GET /wait HTTP/1.1\r\n"+host+"\r\n")
	<-armed // the handler waits on its context: the watcher reads what comes next
	io.WriteString(nc, "GET /next HTTP/1.1\r\n"+host+"\r\n")
	for _, want := range []string{"/wait", "/next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want {
			t.Errorf("got %q, want %q", b, want)
		}
	}
}

// Expect: 100-continue gets the 100 at the handler's first body read, and
// not before; a handler that answers without reading closes the
// connection instead of waiting for a body the client holds back.
func TestExpectContinue(t *testing.T) {
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			b, _ := io.ReadAll(r.Body)
			w.Write(b)
			return
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	io.WriteString(nc, "POST /read HTTP/1.1\r\n"+host+"Expect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("got %v, %v; want 100 Continue first", resp, err)
	}
	io.WriteString(nc, "body")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "body" {
		t.Errorf("echoed %q, want \"body\"", b)
	}

	resps, _, closed := roundTrip(t, addr, "POST /deny HTTP/1.1\r\n"+host+"Expect: 100-continue\r\nContent-Length: 4\r\n\r\n", 1, false)
	if resps[0].StatusCode != http.StatusForbidden || !closed {
		t.Errorf("unread Expect body: %d, closed %v; want 403 and closed", resps[0].StatusCode, closed)
	}
}

// Shutdown closes idle connections at once, lets an active request finish
// (its connection closed after it), and Serve returns http.ErrServerClosed.
func TestShutdown(t *testing.T) {
	inHandler, release := make(chan struct{}), make(chan struct{})
	addr, srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(inHandler)
			<-release
		}
		io.WriteString(w, "done")
	}))
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_ = idle.SetDeadline(time.Now().Add(5 * time.Second))
	ibr := bufio.NewReader(idle)
	io.WriteString(idle, "GET /fast HTTP/1.1\r\n"+host+"\r\n")
	if resp, err := http.ReadResponse(ibr, nil); err != nil {
		t.Fatal(err)
	} else {
		io.ReadAll(resp.Body)
	}
	active, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer active.Close()
	_ = active.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(active, "GET /slow HTTP/1.1\r\n"+host+"\r\n")
	<-inHandler
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	if _, err := ibr.ReadByte(); err == nil {
		t.Error("the idle connection got a byte, want it closed")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request active", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(active), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "done" || !resp.Close {
		t.Errorf("active request: %q, Close %v; want \"done\" and Connection: close", b, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after Shutdown")
	}
}

// A keep-alive connection left idle is closed after the idle timeout
// (give or take the coarse deadline's slack: a second, at most half),
// also after a request whose handler waited on its context (the watcher's
// background read is then the wait for the next request).
func TestIdleTimeout(t *testing.T) {
	for _, idle := range []time.Duration{1500 * time.Millisecond, 400 * time.Millisecond} {
		for _, watched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/watched=%v", idle, watched), func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if watched {
						_ = r.Context().Done() // arms the background read
					}
				}), IdleTimeout: idle, ReadHeaderTimeout: idle}
				go srv.Serve(ln)
				defer srv.Close()
				nc, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(idle + 5*time.Second))
				br := bufio.NewReader(nc)
				io.WriteString(nc, "GET / HTTP/1.1\r\n"+host+"\r\n")
				if _, err := http.ReadResponse(br, nil); err != nil {
					t.Fatal(err)
				}
				t0 := time.Now()
				_, err = br.ReadByte()
				lo := idle - min(time.Second, idle/2) - 50*time.Millisecond
				if el := time.Since(t0); err == nil || el < lo || el > idle+time.Second {
					t.Errorf("idle connection: %v after %v; want closed after %v..%v", err, el, lo, idle)
				}
			})
		}
	}
}

// A handler that runs past the read deadline set for its head still
// learns of its client leaving, and the deadline passing alone is not
// taken for the client leaving; the connection then serves its next
// request.
func TestWatcherOutlivesHeadDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	waiting, verdict := make(chan struct{}, 2), make(chan error, 2)
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /stay outwaits the head's deadline (at most 1.5 timeouts away);
		// /leave waits for its client to go, with seconds to spare.
		wait := map[string]time.Duration{"/stay": 3 * timeout, "/leave": 10 * time.Second}[r.URL.Path]
		if wait == 0 {
			return
		}
		done := r.Context().Done()
		waiting <- struct{}{}
		select {
		case <-done:
			verdict <- r.Context().Err()
		case <-time.After(wait):
			verdict <- nil
		}
	}), ReadHeaderTimeout: timeout, Logger: slog.New(slog.DiscardHandler)}
	go srv.Serve(ln)
	defer srv.Close()
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc, bufio.NewReader(nc)
	}

	// The client stays: no cancel, and the next request is served.
	nc, br := dial()
	defer nc.Close()
	io.WriteString(nc, "GET /stay HTTP/1.1\r\n"+host+"\r\n")
	<-waiting
	if err := <-verdict; err != nil {
		t.Errorf("the client stayed past the head's deadline, yet its context ended: %v", err)
	}
	for _, path := range []string{"/stay", "/next"} {
		if path == "/next" {
			io.WriteString(nc, "GET /next HTTP/1.1\r\n"+host+"\r\n")
		}
		if resp, err := http.ReadResponse(br, nil); err != nil {
			t.Fatalf("%s: %v", path, err)
		} else {
			resp.Body.Close()
		}
	}

	// The client leaves after the head's deadline passed: cancelled.
	nc2, _ := dial()
	io.WriteString(nc2, "GET /leave HTTP/1.1\r\n"+host+"\r\n")
	<-waiting
	time.Sleep(2 * timeout) // the head's deadline has passed: the watcher read on
	nc2.Close()
	if err := <-verdict; !errors.Is(err, context.Canceled) {
		t.Errorf("the client left after the head's deadline: context %v, want context.Canceled", err)
	}
}

// A wait on the request's context starts the background read only once
// it has lasted watchDelay: a handler answering sooner costs no goroutine
// and no parked read (issue #14), one waiting longer is watched.
func TestWatchStartsAfterDelay(t *testing.T) {
	type seen struct{ atOnce, later bool }
	got := make(chan seen, 1)
	addr, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context().(*reqCtx)
		cr := ctx.c.cr
		reading := func() bool {
			cr.mu.Lock()
			defer cr.mu.Unlock()
			return cr.inRead
		}
		began := time.Now()
		_ = ctx.Done() // asks for the watch
		var s seen
		s.atOnce = reading()
		if time.Since(began) >= watchDelay {
			t.Skip("this machine took watchDelay to ask; nothing to judge")
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if s.later = reading(); s.later {
				break
			}
		}
		got <- s
		io.WriteString(w, "ok")
	}))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-got
	if s.atOnce {
		t.Error("the background read started as soon as the context was waited on, not after watchDelay")
	}
	if !s.later {
		t.Error("the background read never started while the handler waited on its context")
	}
}

// AfterFunc's registrations run once the context is cancelled, each in its
// own goroutine, except those stopped before; stop reports whether it
// stopped one, and one registered after the cancel runs at once.
func TestRequestContextAfterFunc(t *testing.T) {
	x := &reqCtx{Context: context.Background(), c: &conn{}}
	ran := make(chan int, 4)
	var stops []func() bool
	for i := range 3 {
		stops = append(stops, x.AfterFunc(func() { ran <- i }))
	}
	if !stops[1]() || stops[1]() {
		t.Fatal("stop: want true, then false")
	}
	x.cancel(context.Canceled)
	late := x.AfterFunc(func() { ran <- 3 })
	got := map[int]bool{}
	for range 3 {
		select {
		case i := <-ran:
			got[i] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("ran %v; want 0, 2 and 3", got)
		}
	}
	if !got[0] || !got[2] || !got[3] || got[1] {
		t.Fatalf("ran %v; want 0, 2 and 3", got)
	}
	if stops[0]() || late() {
		t.Error("stop after the functions ran reported true")
	}
	select {
	case i := <-ran:
		t.Errorf("%d ran twice, or a stopped one ran", i)
	case <-time.After(50 * time.Millisecond):
	}
}
