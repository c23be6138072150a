package collapse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// body returns n deterministic pseudo-random bytes.
func body(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeOdd writes p in 7-byte writes (the last may be shorter).
func writeOdd(w *Fill, p []byte) error {
	for len(p) > 0 {
		n := min(7, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// verify reads r to the end, comparing each byte with want as it arrives
// (without holding a copy: 1,000 readers of 1 MiB would otherwise page in
// a gigabyte), and returns how many bytes matched and the final error (nil
// for io.EOF).
func verify(r io.Reader, want []byte) (int, error) {
	buf := make([]byte, 32<<10)
	off := 0
	for {
		n, err := r.Read(buf)
		if off+n > len(want) || !bytes.Equal(buf[:n], want[off:off+n]) {
			return off, errors.New("body differs")
		}
		off += n
		if err == io.EOF {
			if off != len(want) {
				return off, errors.New("body short")
			}
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// within fails the test if ch is not closed within a generous guard; it
// turns a deadlock into a clear failure, it never decides an outcome.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// COL-1, COL-5: 1,000 concurrent callers, one fill, identical bodies.
func TestOneFillManyReaders(t *testing.T) {
	const callers = 1000
	want := body(1 << 20)
	var g Group
	var calls atomic.Int64
	release := make(chan struct{})
	fill := func(ctx context.Context, w *Fill) error {
		calls.Add(1)
		<-release // every Do has been made while this fill runs
		if err := w.Head(200); err != nil {
			return err
		}
		return writeOdd(w, want)
	}

	results := make([]*Result, callers)
	leaders := make([]bool, callers)
	var dos sync.WaitGroup
	for i := range callers {
		dos.Go(func() { results[i], leaders[i] = g.Do(t.Context(), "k", fill) })
	}
	dos.Wait()
	close(release)

	var reads sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		reads.Go(func() {
			meta, err := results[i].Head(t.Context())
			if err != nil || meta != 200 {
				errs <- errors.Join(errors.New("bad head"), err)
				return
			}
			rc := results[i].Body()
			defer rc.Close()
			if _, err := verify(rc, want); err != nil {
				errs <- err
			}
		})
	}
	reads.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fill called %d times, want 1", n)
	}
	nLeaders := 0
	for _, l := range leaders {
		if l {
			nLeaders++
		}
	}
	if nLeaders != 1 {
		t.Fatalf("%d leaders, want 1", nLeaders)
	}
	if s := g.Stats(); s.Fills != 1 || s.Joins != callers-1 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// COL-5: followers get part 1 while the fill is still running: the fill
// writes part 1 and only goes on once every reader has read all of it.
func TestFollowersStreamBeforeFillEnds(t *testing.T) {
	const callers = 200
	want := body(300_001)
	part1 := want[:100_003]
	var g Group
	started := make(chan struct{})
	var readPart1 sync.WaitGroup
	readPart1.Add(callers)
	allRead := make(chan struct{})
	go func() { readPart1.Wait(); close(allRead) }()
	var wroteRest atomic.Bool

	fill := func(ctx context.Context, w *Fill) error {
		<-started
		w.Head(nil)
		if err := writeOdd(w, part1); err != nil {
			return err
		}
		<-allRead // the barrier: deadlocks unless readers stream
		wroteRest.Store(true)
		return writeOdd(w, want[len(part1):])
	}
	results := make([]*Result, callers)
	for i := range callers {
		results[i], _ = g.Do(t.Context(), "k", fill)
	}
	close(started)

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			rc := results[i].Body()
			defer rc.Close()
			got := make([]byte, len(part1))
			if _, err := io.ReadFull(rc, got); err != nil {
				errs <- err
				readPart1.Done()
				return
			}
			if wroteRest.Load() {
				errs <- errors.New("read part 1 only after the fill wrote the rest")
			}
			readPart1.Done()
			if !bytes.Equal(got, part1) {
				errs <- errors.New("part 1 differs")
			}
			if _, err := verify(rc, want[len(part1):]); err != nil {
				errs <- err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	within(t, done, "readers")
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// COL-3: different keys run separate, concurrent fills.
func TestDifferentKeysDoNotCollapse(t *testing.T) {
	var g Group
	var calls atomic.Int64
	var bothStarted sync.WaitGroup
	bothStarted.Add(2)
	fill := func(v string) FillFunc {
		return func(ctx context.Context, w *Fill) error {
			calls.Add(1)
			bothStarted.Done()
			bothStarted.Wait() // both fills are running at once
			w.Head(v)
			_, err := w.Write([]byte(v))
			return err
		}
	}
	ra, la := g.Do(t.Context(), "a", fill("A"))
	rb, lb := g.Do(t.Context(), "b", fill("B"))
	if !la || !lb {
		t.Fatalf("leaders a=%v b=%v, want both", la, lb)
	}
	for _, c := range []struct {
		r    *Result
		want string
	}{{ra, "A"}, {rb, "B"}} {
		got, err := io.ReadAll(c.r.Body())
		if err != nil || string(got) != c.want {
			t.Fatalf("got %q, %v; want %q", got, err, c.want)
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("fill calls %d, want 2", calls.Load())
	}
}

// COL-6: the leader's context ending detaches the leader only; the fill and
// the followers carry on.
func TestLeaderCancelledFollowersComplete(t *testing.T) {
	want := body(200_000)
	var g Group
	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	part1Written := make(chan struct{})
	leaderGone := make(chan struct{})
	fillCtxErr := make(chan error, 1)
	fill := func(ctx context.Context, w *Fill) error {
		w.Head(nil)
		if err := writeOdd(w, want[:1000]); err != nil {
			return err
		}
		close(part1Written)
		<-leaderGone
		fillCtxErr <- ctx.Err()
		return writeOdd(w, want[1000:])
	}
	leader, isLeader := g.Do(leaderCtx, "k", fill)
	if !isLeader {
		t.Fatal("first Do is not the leader")
	}
	var followers []*Result
	for range 10 {
		r, _ := g.Do(t.Context(), "k", fill)
		followers = append(followers, r)
	}
	within(t, part1Written, "part 1")
	lb := leader.Body()
	if _, err := io.ReadFull(lb, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	cancelLeader()
	if _, err := io.ReadAll(lb); !errors.Is(err, context.Canceled) {
		t.Fatalf("leader read after cancel: %v, want context.Canceled", err)
	}
	if _, err := leader.Head(t.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("leader head after cancel: %v", err)
	}
	close(leaderGone)
	if err := <-fillCtxErr; err != nil {
		t.Fatalf("fill context ended with the leader: %v", err)
	}
	for _, r := range followers {
		got, err := io.ReadAll(r.Body())
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("follower got %d bytes, %v", len(got), err)
		}
	}
}

// COL-2: the fill's context carries the leader's values.
func TestFillContextCarriesLeaderValues(t *testing.T) {
	type key struct{}
	var g Group
	ctx := context.WithValue(t.Context(), key{}, "leader")
	got := make(chan any, 1)
	r, _ := g.Do(ctx, "k", func(ctx context.Context, w *Fill) error {
		got <- ctx.Value(key{})
		return w.Head(nil)
	})
	if _, err := r.Head(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "leader" {
		t.Fatalf("fill ctx value %v", v)
	}
}

// COL-7: a fill failing before its head gives every caller the same error.
func TestFailBeforeHead(t *testing.T) {
	const callers = 100
	errGateway := errors.New("504 gateway timeout")
	var g Group
	release := make(chan struct{})
	fill := func(ctx context.Context, w *Fill) error {
		<-release
		return errGateway
	}
	var results []*Result
	for range callers {
		r, _ := g.Do(t.Context(), "k", fill)
		results = append(results, r)
	}
	close(release)
	for _, r := range results {
		if _, err := r.Head(t.Context()); err != errGateway {
			t.Fatalf("head error %v, want the fill's error", err)
		}
		if _, err := io.ReadAll(r.Body()); err != errGateway {
			t.Fatalf("body error %v, want the fill's error", err)
		}
		<-r.Done()
		if r.Err() != errGateway {
			t.Fatalf("Err %v", r.Err())
		}
	}
	if s := g.Stats(); s.Fills != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFillWithoutHeadOrPanicking(t *testing.T) {
	var g Group
	r, _ := g.Do(t.Context(), "nil", func(context.Context, *Fill) error { return nil })
	if _, err := r.Head(t.Context()); !errors.Is(err, ErrNoHead) {
		t.Fatalf("got %v, want ErrNoHead", err)
	}
	r, _ = g.Do(t.Context(), "panic", func(context.Context, *Fill) error { panic("boom") })
	if _, err := r.Head(t.Context()); err == nil {
		t.Fatal("panicking fill gave no error")
	}
	r, _ = g.Do(t.Context(), "order", func(_ context.Context, w *Fill) error {
		if _, err := w.Write([]byte("x")); !errors.Is(err, ErrFillState) {
			return errors.New("write before head allowed")
		}
		w.Head(1)
		if err := w.Head(2); !errors.Is(err, ErrFillState) {
			return errors.New("second head allowed")
		}
		return nil
	})
	<-r.Done()
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

// COL-7: a fill failing mid-body truncates every reader with an error,
// never a clean EOF.
func TestFailMidBody(t *testing.T) {
	const callers = 50
	errReset := errors.New("origin reset")
	want := body(70_000)
	var g Group
	release := make(chan struct{})
	fill := func(ctx context.Context, w *Fill) error {
		<-release
		w.Head(200)
		if err := writeOdd(w, want); err != nil {
			return err
		}
		return errReset
	}
	var results []*Result
	for range callers {
		r, _ := g.Do(t.Context(), "k", fill)
		results = append(results, r)
	}
	close(release)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for _, r := range results {
		wg.Go(func() {
			if meta, err := r.Head(t.Context()); err != nil || meta != 200 {
				errs <- errors.New("bad head")
				return
			}
			rc := r.Body()
			var got []byte
			buf := make([]byte, 4096)
			for {
				n, err := rc.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					errs <- errors.New("clean EOF from a truncated fill")
					return
				}
				if err != nil {
					if !errors.Is(err, errReset) || !errors.Is(err, ErrTruncated) {
						errs <- err
					}
					break
				}
			}
			if !bytes.Equal(got, want) {
				errs <- errors.New("bytes before the failure differ")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := results[0].Err(); !errors.Is(err, errReset) {
		t.Fatalf("Err %v", err)
	}
}

// A follower that stops reading, closes its body, or whose context ends
// blocks neither the fill nor the others.
func TestStalledAndCancelledFollowers(t *testing.T) {
	want := body(500_000)
	var g Group
	release := make(chan struct{})
	fill := func(ctx context.Context, w *Fill) error {
		<-release
		w.Head(nil)
		return writeOdd(w, want)
	}
	// Stalled: holds a body, reads one byte, never reads again.
	stalled, _ := g.Do(t.Context(), "k", fill)
	// Cancelled: waits on its head, then its context ends.
	cctx, cancel := context.WithCancel(t.Context())
	cancelled, _ := g.Do(cctx, "k", fill)
	// Closed: blocked in Read when its body is closed.
	closedR, _ := g.Do(t.Context(), "k", fill)
	good, _ := g.Do(t.Context(), "k", fill)

	headErr := make(chan error, 1)
	go func() { _, err := cancelled.Head(t.Context()); headErr <- err }()
	cancel()
	if err := <-headErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled follower head: %v", err)
	}
	closedBody := closedR.Body()
	readErr := make(chan error, 1)
	go func() { _, err := closedBody.Read(make([]byte, 10)); readErr <- err }()
	closedBody.Close()
	if err := <-readErr; !errors.Is(err, ErrReaderClosed) {
		t.Fatalf("closed reader: %v", err)
	}

	close(release)
	sb := stalled.Body()
	if _, err := sb.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	within(t, good.Done(), "the fill to end despite a stalled reader")
	got, err := io.ReadAll(good.Body())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("good follower got %d bytes, %v", len(got), err)
	}
	// The stalled reader can still finish later.
	rest, err := io.ReadAll(sb)
	if err != nil || len(rest) != len(want)-1 {
		t.Fatalf("stalled reader rest %d bytes, %v", len(rest), err)
	}
}

// After a fill ends its key is released: the next Do starts a new fill.
func TestKeyReleasedAfterFill(t *testing.T) {
	var g Group
	var calls atomic.Int64
	fill := func(ctx context.Context, w *Fill) error {
		n := calls.Add(1)
		w.Head(n)
		return nil
	}
	for i := int64(1); i <= 3; i++ {
		r, leader := g.Do(t.Context(), "k", fill)
		if !leader {
			t.Fatalf("Do %d after the previous fill ended joined it", i)
		}
		if _, err := io.ReadAll(r.Body()); err != nil {
			t.Fatal(err)
		}
		if meta, _ := r.Head(t.Context()); meta != i {
			t.Fatalf("head %v, want %d", meta, i)
		}
	}
	// A failed fill releases the key too.
	r, _ := g.Do(t.Context(), "k", func(context.Context, *Fill) error { return errors.New("x") })
	<-r.Done()
	if _, leader := g.Do(t.Context(), "k", fill); !leader {
		t.Fatal("Do after a failed fill joined it")
	}
	if s := g.Stats(); s.Fills != 5 || s.Joins != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Release gives the key up while the fill still runs: a Do after it
// starts a fill of its own; a caller attached before it keeps the first
// fill, and the first fill's end does not take the second's key.
func TestReleaseBeforeEnd(t *testing.T) {
	var g Group
	released, finish := make(chan struct{}), make(chan struct{})
	first := func(ctx context.Context, w *Fill) error {
		<-finish // a follower attaches while the key is held
		w.Release()
		w.Head("first")
		close(released)
		<-finish
		return nil
	}
	r1, _ := g.Do(t.Context(), "k", first)
	f1, leader := g.Do(t.Context(), "k", first)
	if leader {
		t.Fatal("a Do before Release started a fill of its own")
	}
	finish <- struct{}{}
	within(t, released, "the release")
	hold := make(chan struct{})
	r2, leader := g.Do(t.Context(), "k", func(ctx context.Context, w *Fill) error {
		w.Head("second")
		<-hold
		return nil
	})
	if !leader {
		t.Fatal("a Do after Release joined the released fill")
	}
	for _, c := range []struct {
		r    *Result
		want string
	}{{r1, "first"}, {f1, "first"}, {r2, "second"}} {
		if meta, err := c.r.Head(t.Context()); meta != c.want || err != nil {
			t.Fatalf("head %v (%v), want %s", meta, err, c.want)
		}
	}
	close(finish)
	<-r1.Done()
	if _, leader := g.Do(t.Context(), "k", nil); leader {
		t.Fatal("the released fill's end took the second fill's key")
	}
	close(hold)
}

// Group.Close cancels running fills, waits for them, and fails later Dos.
func TestCloseStopsFills(t *testing.T) {
	g := New(t.Context())
	wrote := make(chan struct{})
	fill := func(ctx context.Context, w *Fill) error {
		w.Head(nil)
		w.Write([]byte("partial"))
		close(wrote)
		<-ctx.Done()
		_, err := w.Write([]byte("more"))
		return err
	}
	r, _ := g.Do(t.Context(), "k", fill)
	f, _ := g.Do(t.Context(), "k", fill)
	within(t, wrote, "the first write")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Close returned before the fill did")
	}
	for _, res := range []*Result{r, f} {
		got, err := io.ReadAll(res.Body())
		if string(got) != "partial" || !errors.Is(err, ErrClosed) || !errors.Is(err, ErrTruncated) {
			t.Fatalf("after Close: %q, %v", got, err)
		}
	}
	r, leader := g.Do(t.Context(), "k", fill)
	if _, err := r.Head(t.Context()); leader || !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: leader=%v err=%v", leader, err)
	}
	if g.Stats().InFlight != 0 {
		t.Fatal("fills still in flight")
	}
}

// Cancelling New's parent stops fills too.
func TestParentCancelStopsFills(t *testing.T) {
	parent, cancel := context.WithCancel(t.Context())
	g := New(parent)
	r, _ := g.Do(t.Context(), "k", func(ctx context.Context, w *Fill) error {
		<-ctx.Done()
		return ctx.Err()
	})
	cancel()
	within(t, r.Done(), "the fill to stop")
	if _, err := r.Head(t.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("head %v", err)
	}
}

// BenchmarkCollapse1000 measures the time to the last byte of a 1 MiB fill
// read by 1,000 collapsed readers, against a single reader.
func BenchmarkCollapse1000(b *testing.B) {
	const size = 1 << 20
	want := body(size)
	for _, readers := range []int{1, 1000} {
		b.Run(map[int]string{1: "readers=1", 1000: "readers=1000"}[readers], func(b *testing.B) {
			// ns/op is the time from the first Do to the last reader's
			// last byte; MB/s is the bytes delivered to all readers.
			b.SetBytes(size * int64(readers))
			bufs := make([][]byte, readers)
			for i := range bufs {
				bufs[i] = make([]byte, 32<<10)
			}
			fill := func(ctx context.Context, w *Fill) error {
				w.Head(nil)
				for p := want; len(p) > 0; {
					n := min(32<<10, len(p))
					if _, err := w.Write(p[:n]); err != nil {
						return err
					}
					p = p[n:]
				}
				return nil
			}
			ctx := context.Background()
			for b.Loop() {
				var g Group
				var wg sync.WaitGroup
				for i := range readers {
					r, _ := g.Do(ctx, "k", fill)
					wg.Go(func() {
						rc := r.Body()
						n, err := io.CopyBuffer(io.Discard, rc, bufs[i])
						if err != nil || n != size {
							b.Errorf("read %d, %v", n, err)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}
