package journal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestRingDropsOldest(t *testing.T) {
	j := New(3)
	for i := 0; i < 5; i++ {
		j.OpenConn(Conn{ID: uint64(i + 1), Listener: "l"})
		j.Begin(Request{Path: fmt.Sprintf("/%d", i), Listener: "l", ConnID: uint64(i + 1)})
	}
	s := j.Query(Query{})
	if len(s.Requests) != 3 || s.Requests[0].Path != "/2" || s.Requests[2].Seq != 5 || s.Dropped != 4 {
		t.Fatalf("snapshot: %+v", s)
	}
	if len(s.Conns) != 3 || s.Conns[0].ID != 3 {
		t.Fatalf("conns: %+v", s.Conns)
	}
}

func TestQueryFilters(t *testing.T) {
	j := New(0)
	j.OpenConn(Conn{ID: 1, Listener: "a"})
	j.OpenConn(Conn{ID: 2, Listener: "b"})
	j.Begin(Request{ConnID: 1, Listener: "a", Path: "/x/1", Method: "GET"})
	j.Begin(Request{ConnID: 2, Listener: "b", Path: "/x/2", Method: "HEAD"})
	j.Begin(Request{ConnID: 2, Listener: "b", Path: "/y", Method: "GET"})
	for _, tc := range []struct {
		q           Query
		reqs, conns int
	}{
		{Query{}, 3, 2},
		{Query{Listener: "b"}, 2, 1},
		{Query{PathPrefix: "/x/"}, 2, 2},
		{Query{PathPrefix: "/y"}, 1, 1},
		{Query{Method: "HEAD"}, 1, 2},
		{Query{AfterSeq: 2}, 1, 2},
		{Query{Limit: 1}, 1, 2},
	} {
		s := j.Query(tc.q)
		if len(s.Requests) != tc.reqs || len(s.Conns) != tc.conns {
			t.Errorf("%+v: %d requests %d conns, want %d %d", tc.q, len(s.Requests), len(s.Conns), tc.reqs, tc.conns)
		}
	}
}

func TestUpdateAndClose(t *testing.T) {
	j := New(0)
	j.OpenConn(Conn{ID: 7})
	seq := j.Begin(Request{ConnID: 7})
	j.Update(seq, func(r *Request) { r.End = EndComplete; r.BodyBytes = 9 })
	now := time.Now()
	j.CloseConn(7, "client closed", now)
	s := j.Query(Query{})
	if s.Requests[0].End != EndComplete || s.Requests[0].BodyBytes != 9 || s.Conns[0].CloseReason != "client closed" || !s.Conns[0].Closed.Equal(now) {
		t.Fatalf("%+v", s)
	}
}

func TestWaitRequests(t *testing.T) {
	j := New(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 3; i++ {
			seq := j.Begin(Request{Path: "/w"})
			j.Update(seq, func(r *Request) { r.End = EndComplete })
		}
	}()
	reqs, err := j.WaitEnded(ctx, Query{PathPrefix: "/w"}, 3)
	wg.Wait()
	if err != nil || len(reqs) != 3 {
		t.Fatalf("%v %d", err, len(reqs))
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if reqs, err := j.WaitRequests(short, Query{PathPrefix: "/w"}, 4); err == nil || len(reqs) != 3 {
		t.Fatalf("wait for more than exist: %v %d", err, len(reqs))
	}
}

func TestResetKeepsSeqGrowing(t *testing.T) {
	j := New(0)
	j.Begin(Request{})
	j.Reset()
	if seq := j.Begin(Request{}); seq != 2 {
		t.Fatalf("seq after reset = %d", seq)
	}
}
