package originemu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"golang.org/x/net/http2"
)

// Every action is checked on an HTTP/1.1 and an h2 listener.
var protoListeners = []string{"http", "h2"}

func TestStatusHeadersBody(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			c := clientFor(t, e, ln, "origin.test")
			mustAdd(t, e,
				rules.Rule{Match: rules.Match{Listener: ln, Path: "/fixed"}, Action: rules.Action{Status: 503, Headers: map[string]string{"Retry-After": "7"}, Body: ptr("busy")}},
				rules.Rule{Match: rules.Match{Listener: ln, Path: "/synthetic"}, Action: rules.Action{Status: 200, BodySize: ptr[int64](100000)}},
				rules.Rule{Match: rules.Match{Listener: ln, Path: "/plain"}, Action: rules.Action{Status: 429}},
			)
			resp, body, err := get(t, c, e.URL(ln)+"/fixed")
			if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" || string(body) != "busy" {
				t.Fatalf("fixed: %v %v %q %v", resp.StatusCode, resp.Header, body, err)
			}
			resp, body, err = get(t, c, e.URL(ln)+"/synthetic")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("synthetic: %v %v", resp, err)
			}
			if err := synth.Verify(synth.Object{Path: "/synthetic", Size: 100000, Version: "1"}, 0, body); err != nil || len(body) != 100000 {
				t.Fatalf("synthetic body (%d bytes): %v", len(body), err)
			}
			resp, body, err = get(t, c, e.URL(ln)+"/plain")
			if err != nil || resp.StatusCode != 429 || !strings.Contains(string(body), "429") {
				t.Fatalf("plain: %v %q %v", resp, body, err)
			}
			// Each rule fired once; the next request gets the object.
			resp, _, err = get(t, c, e.URL(ln)+"/fixed")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("after the budget: %v %v", resp, err)
			}
		})
	}
}

func TestDelayBeforeHeaders(t *testing.T) {
	e := startEmu(t, allProfiles())
	const delay = 200 * time.Millisecond
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			c := clientFor(t, e, ln, "origin.test")
			mustAdd(t, e, rules.Rule{Match: rules.Match{Listener: ln}, Action: rules.Action{Delay: rules.Duration(delay)}})
			start := time.Now()
			resp, _, err := get(t, c, e.URL(ln)+"/slow")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET: %v %v", resp, err)
			}
			if el := time.Since(start); el < delay {
				t.Fatalf("response after %v, before the %v delay", el, delay)
			}
			// And a client that waits less than the delay times out.
			mustAdd(t, e, rules.Rule{Match: rules.Match{Listener: ln}, Action: rules.Action{Delay: rules.Duration(delay)}})
			ctx, cancel := context.WithTimeout(context.Background(), delay/4)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.URL(ln)+"/slow", nil)
			if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("impatient client: err = %v, want deadline exceeded", err)
			}
		})
	}
}

func TestDrip(t *testing.T) {
	e := startEmu(t, allProfiles())
	const every = 50 * time.Millisecond
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			c := clientFor(t, e, ln, "origin.test")
			mustAdd(t, e, rules.Rule{Match: rules.Match{Listener: ln}, Action: rules.Action{Drip: &rules.Drip{Bytes: 256, Every: rules.Duration(every)}}})
			start := time.Now()
			resp, body, err := get(t, c, e.URL(ln)+"/drip")
			if err != nil || len(body) != objects.DefaultSize {
				t.Fatalf("GET: %v, %d bytes", err, len(body))
			}
			_ = resp
			// 1024 bytes in 4 pieces: 3 waits between them.
			if el := time.Since(start); el < 3*every {
				t.Fatalf("body complete after %v, want at least %v", el, 3*every)
			}
		})
	}
}

func TestTruncateAndReset(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, ln := range protoListeners {
		for _, tc := range []struct {
			name  string
			cut   func(n int64) rules.Action
			after int64
			end   string
			check func(t *testing.T, err error)
		}{
			{"truncate", func(n int64) rules.Action { return rules.Action{Truncate: &rules.Cut{AfterBytes: &n}} }, 300, journal.EndTruncated, nil},
			{"reset-after", func(n int64) rules.Action { return rules.Action{Reset: &rules.Cut{AfterBytes: &n}} }, 300, journal.EndReset, nil},
			{"truncate-at-0", func(n int64) rules.Action { return rules.Action{Truncate: &rules.Cut{AfterBytes: &n}} }, 0, journal.EndTruncated, nil},
		} {
			t.Run(ln+"/"+tc.name, func(t *testing.T) {
				c := clientFor(t, e, ln, "origin.test")
				path := "/" + ln + "/" + tc.name
				mustAdd(t, e, rules.Rule{Match: rules.Match{Path: path}, Action: tc.cut(tc.after)})
				resp, err := c.Get(e.URL(ln) + path)
				if err != nil {
					t.Fatalf("headers should arrive before the cut: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					t.Fatalf("read %d bytes and a clean EOF; want an error", len(body))
				}
				if int64(len(body)) > tc.after {
					t.Fatalf("read %d bytes, more than the %d before the cut", len(body), tc.after)
				}
				if ln == "http" && tc.name == "truncate" && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("HTTP/1.1 truncation error = %v, want unexpected EOF", err)
				}
				reqs := waitEnded(t, e, journal.Query{PathPrefix: path}, 1)
				if reqs[0].End != tc.end || reqs[0].BodyBytes != tc.after {
					t.Fatalf("journal: end %q after %d bytes, want %q after %d", reqs[0].End, reqs[0].BodyBytes, tc.end, tc.after)
				}
			})
		}
	}
}

func TestResetBeforeHeaders(t *testing.T) {
	e := startEmu(t, allProfiles())
	mustAdd(t, e, rules.Rule{Match: rules.Match{Listener: "http"}, Action: rules.Action{Reset: &rules.Cut{}}})
	conn, err := net.Dial("tcp", e.Addr("http"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /x HTTP/1.1\r\nHost: o\r\n\r\n")
	_, err = bufio.NewReader(conn).ReadByte()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read error = %v, want ECONNRESET", err)
	}
	reqs := waitEnded(t, e, journal.Query{Listener: "http"}, 1)
	if reqs[0].End != journal.EndReset || reqs[0].Status != 0 {
		t.Fatalf("journal: %+v", reqs[0])
	}
}

func TestStall(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			c := clientFor(t, e, ln, "origin.test")
			mustAdd(t, e, rules.Rule{Match: rules.Match{Listener: ln}, Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr[int64](100)}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.URL(ln)+"/stall", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 100)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				t.Fatalf("reading the bytes before the stall: %v", err)
			}
			got := make(chan error, 1)
			go func() { _, err := resp.Body.Read(make([]byte, 1)); got <- err }()
			// The emulator holds the stream: the journal shows it pending.
			q := journal.Query{Listener: ln, PathPrefix: "/stall"}
			if r := e.Journal().Query(q).Requests; len(r) != 1 || r[0].End != journal.EndPending {
				t.Fatalf("journal while stalled: %+v", r)
			}
			select {
			case err := <-got:
				t.Fatalf("read returned (%v) while the origin stalls", err)
			default:
			}
			cancel()
			if err := <-got; err == nil {
				t.Fatal("read after cancel returned no error")
			}
			reqs := waitEnded(t, e, q, 1)
			if reqs[0].End != journal.EndStalled || !strings.Contains(reqs[0].Note, "stalled after 100") {
				t.Fatalf("journal: %+v", reqs[0])
			}
		})
	}
}

func TestH2Faults(t *testing.T) {
	e := startEmu(t, allProfiles())
	c := clientFor(t, e, "h2", "origin.test")
	for _, tc := range []struct {
		name   string
		action rules.Action
		code   http2.ErrCode
		before bool
	}{
		{"rst-cancel-before", rules.Action{RSTStream: &rules.Cut{Code: "CANCEL"}}, http2.ErrCodeCancel, true},
		{"rst-internal-after", rules.Action{RSTStream: &rules.Cut{AfterBytes: ptr[int64](200)}}, http2.ErrCodeInternal, false},
		{"goaway-after", rules.Action{GoAway: &rules.Cut{Code: "ENHANCE_YOUR_CALM", AfterBytes: ptr[int64](200)}}, http2.ErrCodeEnhanceYourCalm, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/h2fault/" + tc.name
			mustAdd(t, e, rules.Rule{Match: rules.Match{Path: path}, Action: tc.action})
			resp, err := c.Get(e.URL("h2") + path)
			if tc.before {
				var se http2.StreamError
				if !errors.As(err, &se) || se.Code != tc.code {
					t.Fatalf("error = %v, want RST_STREAM %v", err, tc.code)
				}
			} else {
				if err != nil {
					t.Fatalf("headers: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil || len(body) > 200 {
					t.Fatalf("body read %d bytes, err %v; want an error after <= 200 bytes", len(body), err)
				}
				if !strings.Contains(err.Error(), tc.code.String()) {
					t.Fatalf("error = %v, want it to carry %v", err, tc.code)
				}
			}
			// The client recovers: the next request succeeds.
			if resp, _, err := get(t, c, e.URL("h2")+path); err != nil || resp.StatusCode != 200 {
				t.Fatalf("request after the fault: %v", err)
			}
		})
	}
}

// REFUSED_STREAM tells a client the request was not processed, so Go's h2
// client retries it by itself: the journal shows both attempts.
func TestH2RefusedStreamIsRetriedByClient(t *testing.T) {
	e := startEmu(t, allProfiles())
	c := clientFor(t, e, "h2", "origin.test")
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/refused"}, Action: rules.Action{RSTStream: &rules.Cut{Code: "REFUSED_STREAM"}}})
	resp, _, err := get(t, c, e.URL("h2")+"/refused")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", resp, err)
	}
	reqs := waitEnded(t, e, journal.Query{PathPrefix: "/refused"}, 2)
	if reqs[0].End != journal.EndRSTStream || reqs[1].End != journal.EndComplete || reqs[0].Rule == "" {
		t.Fatalf("journal: %+v", reqs)
	}
}

func TestH2FaultOnHTTP1IsAnError(t *testing.T) {
	e := startEmu(t, allProfiles())
	if _, err := e.AddRules(rules.Rule{Match: rules.Match{Listener: "https"}, Action: rules.Action{GoAway: &rules.Cut{}}}); err == nil || !strings.Contains(err.Error(), "never speaks h2") {
		t.Fatalf("rule with goAway on an https listener: err = %v", err)
	}
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/x"}, Action: rules.Action{RSTStream: &rules.Cut{}}})
	resp, body, err := get(t, clientFor(t, e, "http", ""), e.URL("http")+"/x")
	if err != nil || resp.StatusCode != 501 || !strings.Contains(string(body), "h2-only") {
		t.Fatalf("got %v %q %v, want 501 naming the h2-only fault", resp, body, err)
	}
}

func TestRedirect(t *testing.T) {
	e := startEmu(t, allProfiles())
	loc := e.URL("https") + "/moved"
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/old"}, Action: rules.Action{Redirect: &rules.Redirect{Status: 307, Location: loc}}})
	resp, _, err := get(t, clientFor(t, e, "http", ""), e.URL("http")+"/old")
	if err != nil || resp.StatusCode != 307 || resp.Header.Get("Location") != loc {
		t.Fatalf("got %v %v", resp, err)
	}
}

func TestOmitAndCorruptHeaders(t *testing.T) {
	e := startEmu(t, allProfiles())
	// Raw HTTP/1.1 so that nothing repairs the headers on the way.
	raw := func(path string) string {
		conn, err := net.Dial("tcp", e.Addr("http"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n", path)
		b, _ := io.ReadAll(conn)
		return string(b)
	}
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/omit"}, Action: rules.Action{Omit: []string{"ETag", "Last-Modified", "Date", "Content-Length"}}})
	got := raw("/omit")
	for _, h := range []string{"Etag:", "Last-Modified:", "Date:", "Content-Length:"} {
		if strings.Contains(got, h) {
			t.Errorf("omitted header %s present:\n%s", h, got)
		}
	}
	if !strings.Contains(got, "Transfer-Encoding: chunked") {
		t.Errorf("without Content-Length the body should be chunked:\n%.300s", got)
	}
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/corrupt"}, Action: rules.Action{Corrupt: []string{"ETag", "Last-Modified", "Date", "Content-Length"}}})
	got = raw("/corrupt")
	for _, h := range []string{"Etag: corrupt-etag", "Last-Modified: not-a-date", "Date: not-a-date", "Content-Length: corrupt"} {
		if !strings.Contains(got, h) {
			t.Errorf("want %q in:\n%.400s", h, got)
		}
	}
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/range"}, Action: rules.Action{Corrupt: []string{"Content-Range"}}})
	c := clientFor(t, e, "http", "")
	resp, _, err := get(t, c, e.URL("http")+"/range", "Range", "bytes=0-9")
	if err != nil || resp.StatusCode != 206 || resp.Header.Get("Content-Range") != "bytes corrupt" {
		t.Fatalf("corrupt Content-Range: %v %v", resp, err)
	}
}

func statuses(t *testing.T, c *http.Client, url string, n int, hdr ...string) []int {
	t.Helper()
	var out []int
	for i := 0; i < n; i++ {
		resp, _, err := get(t, c, url, hdr...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.StatusCode)
	}
	return out
}

func TestBudgetNthAndMatch(t *testing.T) {
	e := startEmu(t, allProfiles())
	c := clientFor(t, e, "http", "")
	u := e.URL("http")
	mustAdd(t, e,
		rules.Rule{Match: rules.Match{Path: "/first2"}, Times: 2, Action: rules.Action{Status: 503}},
		rules.Rule{Match: rules.Match{Path: "/second", Nth: 2}, Action: rules.Action{Status: 500}},
		rules.Rule{Match: rules.Match{PathPrefix: "/always/"}, Unlimited: true, Action: rules.Action{Status: 404}},
		rules.Rule{Match: rules.Match{Path: "/hdr", Headers: map[string]string{"X-Fail": "yes"}}, Unlimited: true, Action: rules.Action{Status: 403}},
		rules.Rule{Match: rules.Match{Path: "/method", Method: "head"}, Unlimited: true, Action: rules.Action{Status: 405}},
		rules.Rule{Match: rules.Match{Path: "/other", Listener: "h2c"}, Unlimited: true, Action: rules.Action{Status: 502}},
	)
	for _, tc := range []struct {
		path string
		hdr  []string
		want []int
	}{
		{"/first2", nil, []int{503, 503, 200, 200}},
		{"/second", nil, []int{200, 500, 200}},
		{"/always/a", nil, []int{404, 404, 404}},
		{"/hdr", []string{"X-Fail", "yes"}, []int{403, 403}},
		{"/hdr", []string{"X-Fail", "no"}, []int{200}},
		{"/method", nil, []int{200}},
		{"/other", nil, []int{200}},
	} {
		if got := statuses(t, c, u+tc.path, len(tc.want), tc.hdr...); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s %v: statuses %v, want %v", tc.path, tc.hdr, got, tc.want)
		}
	}
	resp, err := c.Head(u + "/method")
	if err != nil || resp.StatusCode != 405 {
		t.Fatalf("HEAD /method: %v %v", resp, err)
	}
	// The journal names the rule that fired.
	reqs := e.Journal().Query(journal.Query{PathPrefix: "/first2"}).Requests
	if len(reqs) != 4 || reqs[0].Rule != "r1" || reqs[1].Rule != "r1" || reqs[2].Rule != "" {
		t.Fatalf("journal rules: %+v", reqs)
	}
	st := e.Rules()
	if !st[0].Exhausted || st[0].Fired != 2 || st[1].Seen != 2 || st[1].Fired != 1 || !st[1].Exhausted {
		t.Fatalf("rule counters: %+v", st[:2])
	}
}

func TestRuleValidation(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, tc := range []struct {
		name string
		rule rules.Rule
		want []string
	}{
		{"status", rules.Rule{Action: rules.Action{Status: 700}}, []string{"action.status"}},
		{"drip", rules.Rule{Action: rules.Action{Drip: &rules.Drip{}}}, []string{"action.drip.bytes", "action.drip.every"}},
		{"two ends", rules.Rule{Action: rules.Action{Reset: &rules.Cut{}, Truncate: &rules.Cut{AfterBytes: ptr[int64](1)}}}, []string{"at most one"}},
		{"truncate needs bytes", rules.Rule{Action: rules.Action{Truncate: &rules.Cut{}}}, []string{"action.truncate.afterBytes"}},
		{"bad code", rules.Rule{Action: rules.Action{RSTStream: &rules.Cut{Code: "OOPS"}}}, []string{"action.rstStream.code", "OOPS"}},
		{"omit", rules.Rule{Action: rules.Action{Omit: []string{"Server"}}}, []string{"action.omit[0]"}},
		{"listener", rules.Rule{Match: rules.Match{Listener: "nope"}}, []string{"match.listener", "nope"}},
		{"refuse listener", rules.Rule{Match: rules.Match{Listener: "refuse"}}, []string{"match.listener", "answers no requests"}},
		{"redirect", rules.Rule{Action: rules.Action{Redirect: &rules.Redirect{Status: 200}}}, []string{"action.redirect.status", "action.redirect.location"}},
		{"times", rules.Rule{Times: -1}, []string{"times"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.AddRules(tc.rule)
			if err == nil {
				t.Fatal("bad rule accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// A batch with one bad rule adds nothing.
	_, err := e.AddRules(rules.Rule{Action: rules.Action{Status: 503}}, rules.Rule{Action: rules.Action{Status: 9}})
	if err == nil || !strings.Contains(err.Error(), "rules[1].action.status") {
		t.Fatalf("batch error = %v", err)
	}
	if n := len(e.Rules()); n != 0 {
		t.Fatalf("a failed batch left %d rules", n)
	}
}

func TestHoldReleasesAtCount(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, ln := range protoListeners {
		t.Run(ln, func(t *testing.T) {
			const k = 5
			c := clientFor(t, e, ln, "origin.test")
			path := "/hold/" + ln
			mustAdd(t, e, rules.Rule{Match: rules.Match{Path: path}, Times: k, Action: rules.Action{Hold: &rules.Hold{Name: "b-" + ln, Count: k}}})
			var wg sync.WaitGroup
			codes := make(chan int, k)
			send := func() {
				defer wg.Done()
				resp, _, err := get(t, c, e.URL(ln)+path)
				if err != nil {
					t.Error(err)
					return
				}
				codes <- resp.StatusCode
			}
			wg.Add(k - 1)
			for i := 0; i < k-1; i++ {
				go send()
			}
			q := journal.Query{PathPrefix: path}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := e.Journal().WaitRequests(ctx, q, k-1); err != nil {
				t.Fatal(err)
			}
			// All k-1 are held: none has ended, and the barrier counts them.
			waitHold(t, e, "b-"+ln, k-1)
			for _, r := range e.Journal().Query(q).Requests {
				if r.End != journal.EndPending {
					t.Fatalf("request ended before the barrier was full: %+v", r)
				}
			}
			wg.Add(1)
			go send()
			wg.Wait()
			close(codes)
			n := 0
			for code := range codes {
				if code != 200 {
					t.Errorf("status %d", code)
				}
				n++
			}
			if n != k {
				t.Fatalf("%d responses, want %d", n, k)
			}
			for _, r := range waitEnded(t, e, q, k) {
				if !strings.Contains(r.Note, "released") {
					t.Errorf("journal note %q", r.Note)
				}
			}
		})
	}
}

func waitHold(t *testing.T, e *Emulator, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, h := range e.Holds() {
			if h.Name == name && h.Waiting == n {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("hold %s never had %d waiting: %+v", name, n, e.Holds())
}

func TestHoldExplicitRelease(t *testing.T) {
	e := startEmu(t, allProfiles())
	c := clientFor(t, e, "http", "")
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/gate"}, Times: 3, Action: rules.Action{Hold: &rules.Hold{Name: "gate"}}})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, _, err := get(t, c, e.URL("http")+"/gate"); err != nil || resp.StatusCode != 200 {
				t.Errorf("held request: %v %v", resp, err)
			}
		}()
	}
	waitHold(t, e, "gate", 3)
	if n := e.Release("gate"); n != 3 {
		t.Fatalf("released %d, want 3", n)
	}
	wg.Wait()
	if n := e.Release("gate"); n != 0 {
		t.Fatalf("second release freed %d", n)
	}
}

func TestPathScripts(t *testing.T) {
	e := startEmu(t, allProfiles())
	c := clientFor(t, e, "http", "")
	u := e.URL("http")
	if got := statuses(t, c, u+"/_emu/status=503/times=2/seg.ts", 3); fmt.Sprint(got) != "[503 503 200]" {
		t.Fatalf("times=2: %v", got)
	}
	if got := statuses(t, c, u+"/_emu/status=502/always.ts", 3); fmt.Sprint(got) != "[502 502 502]" {
		t.Fatalf("no budget: %v", got)
	}
	resp, body, err := get(t, c, u+"/_emu/size=5000/version=v2/cacheControl=max-age%3D60/video/seg1.ts")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "max-age=60" {
		t.Fatalf("object directives: %v %v", resp, err)
	}
	if err := synth.Verify(synth.Object{Path: "/video/seg1.ts", Size: 5000, Version: "v2"}, 0, body); err != nil || len(body) != 5000 {
		t.Fatalf("object body: %v", err)
	}
	// The same object without directives has other content (version 1,
	// default size), so a cache mixing them up is caught.
	_, plain, _ := get(t, c, u+"/video/seg1.ts")
	if len(plain) == len(body) {
		t.Fatal("directive-free object has the same size")
	}
	resp, _, err = get(t, c, u+"/_emu/redirect=301/location=https:%2F%2Fother.test%2Fx/a")
	if err != nil || resp.StatusCode != 301 || resp.Header.Get("Location") != "https://other.test/x" {
		t.Fatalf("redirect: %v %v", resp, err)
	}
	resp, _, err = get(t, c, u+"/_emu/h.X-Test=yes/omit=ETag/a")
	if err != nil || resp.Header.Get("X-Test") != "yes" || resp.Header.Get("Etag") != "" {
		t.Fatalf("headers: %v %v", resp, err)
	}
	resp, body, err = get(t, c, u+"/_emu/status=5o3/a")
	if err != nil || resp.StatusCode != 400 || !strings.Contains(string(body), `"status=5o3"`) {
		t.Fatalf("bad directive: %v %q", resp, body)
	}
	start := time.Now()
	resp, _, err = get(t, c, u+"/_emu/delay=100ms/a")
	if err != nil || resp.StatusCode != 200 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("delay directive: %v %v after %v", resp, err, time.Since(start))
	}
	resp, err = c.Get(u + "/_emu/truncate=10/a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != 10 {
		t.Fatalf("truncate directive: %d bytes, %v", len(b), err)
	}
}
