package collapse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// Issue #12 item 2, COL-6: a fill whose every caller has gone stops once
// it has written its unattended allowance, and is never joined after; one
// caller still attached (by its context or by not detaching) keeps it
// running to the end.
func TestUnattendedFillStops(t *testing.T) {
	const allowance, size = 100, 1000
	want := body(size)
	for _, tc := range []struct {
		name     string
		goAway   func(leader *Result, cancel context.CancelFunc)
		follower bool // a follower stays attached
		complete bool
	}{
		{"leader's context ends", func(_ *Result, cancel context.CancelFunc) { cancel() }, false, false},
		{"leader detaches", func(l *Result, _ context.CancelFunc) { l.Detach() }, false, false},
		{"a follower stays", func(l *Result, _ context.CancelFunc) { l.Detach() }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(t.Context(), Unattended(allowance))
			gate := make(chan struct{})
			fillErr := make(chan error, 1)
			fill := func(ctx context.Context, w *Fill) error {
				w.Head(nil)
				<-gate
				err := writeOdd(w, want)
				fillErr <- err
				return err
			}
			lctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			leader, _ := g.Do(lctx, "k", fill)
			var follower *Result
			if tc.follower {
				follower, _ = g.Do(t.Context(), "k", fill)
			}
			tc.goAway(leader, cancel)
			leader.Detach() // idempotent with the context's detach
			close(gate)
			err := <-fillErr
			if tc.complete {
				if err != nil {
					t.Fatalf("fill with a follower attached: %v", err)
				}
				got, rerr := io.ReadAll(follower.Body())
				if rerr != nil || !bytes.Equal(got, want) {
					t.Fatalf("follower: %d bytes, %v", len(got), rerr)
				}
				return
			}
			if !errors.Is(err, ErrAbandoned) {
				t.Fatalf("unattended fill: %v, want ErrAbandoned", err)
			}
			// The abandoned fill may still be in the map: a new Do starts
			// a new fill instead of joining it.
			r, leads := g.Do(t.Context(), "k", func(ctx context.Context, w *Fill) error {
				w.Head("new")
				_, err := w.Write(want)
				return err
			})
			if !leads {
				t.Fatal("a Do after the fill was abandoned joined it")
			}
			if h, err := r.Head(t.Context()); err != nil || h != "new" {
				t.Fatalf("new fill's head %v, %v", h, err)
			}
			got, rerr := io.ReadAll(r.Body())
			if rerr != nil || !bytes.Equal(got, want) {
				t.Fatalf("new fill: %d bytes, %v", len(got), rerr)
			}
			if rd, err := io.ReadAll(leader.Body()); lctx.Err() == nil && (!errors.Is(err, ErrTruncated) || len(rd) > allowance+7) {
				t.Fatalf("abandoned fill's body: %d bytes, %v; want at most %d and ErrTruncated", len(rd), err, allowance+7)
			}
			if st := g.Stats(); st.Abandoned != 1 {
				t.Fatalf("stats %+v, want 1 abandoned", st)
			}
		})
	}
}

// Issue #12 item 2: past MaxFills a new fill is refused with
// ErrTooManyFills (no fill function runs), joining a running fill is not
// refused, and a fill ending makes room.
func TestMaxFills(t *testing.T) {
	g := New(t.Context(), MaxFills(2))
	gate := make(chan struct{})
	held := func(ctx context.Context, w *Fill) error {
		w.Head(nil)
		<-gate
		return nil
	}
	a, _ := g.Do(t.Context(), "a", held)
	b, _ := g.Do(t.Context(), "b", held)
	ran := false
	r, leads := g.Do(t.Context(), "c", func(context.Context, *Fill) error { ran = true; return nil })
	if _, err := r.Head(t.Context()); leads || !errors.Is(err, ErrTooManyFills) {
		t.Fatalf("third fill: leader %v, head error %v; want ErrTooManyFills", leads, err)
	}
	if _, leads := g.Do(t.Context(), "a", held); leads {
		t.Fatal("joining a running fill started one")
	}
	close(gate)
	within(t, a.Done(), "fill a") // a fill releases its key before Done
	within(t, b.Done(), "fill b")
	r, leads = g.Do(t.Context(), "c", func(ctx context.Context, w *Fill) error { return w.Head(nil) })
	if _, err := r.Head(t.Context()); !leads || err != nil {
		t.Fatalf("fill after room was made: leader %v, %v", leads, err)
	}
	if ran {
		t.Fatal("the refused fill function ran")
	}
	if st := g.Stats(); st.Refused != 1 {
		t.Fatalf("stats %+v, want 1 refused", st)
	}
}
