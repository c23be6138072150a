package originemu

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// timedGet downloads url and returns how long the body took and its size.
func timedGet(t *testing.T, c *http.Client, url string) (time.Duration, int64) {
	t.Helper()
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return time.Since(start), n
}

func within(t *testing.T, what string, got, want time.Duration, share float64) {
	t.Helper()
	lo, hi := time.Duration(float64(want)*(1-share)), time.Duration(float64(want)*(1+share))
	if got < lo || got > hi {
		t.Errorf("%s took %s, want %s ± %.0f%% (%s..%s)", what, got, want, share*100, lo, hi)
	} else {
		t.Logf("%s took %s (configured %s)", what, got, want)
	}
}

// #16 item 3: a bandwidth limit of 100 KiB/s set at runtime on a listener
// makes a 1 MiB download take 1 MiB / 100 KiB/s = 10.24 s ± 10%; removing
// it makes the next one fast again.
func TestListenerBandwidth(t *testing.T) {
	t.Parallel() // mostly waiting: overlap with the other waiting tests
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	const size, rate = 1 << 20, 100 << 10
	if err := e.PutObjects(objects.Spec{Path: "/mib", Size: ptr[int64](size)}); err != nil {
		t.Fatal(err)
	}
	li, err := e.SetListenerShaping("web", rules.Shaping{Bandwidth: rate})
	if err != nil || li.Shaping == nil || li.Shaping.Bandwidth != rate {
		t.Fatalf("SetListenerShaping: %+v %v", li, err)
	}
	c := &http.Client{Transport: &http.Transport{}}
	want := time.Duration(float64(size) / rate * float64(time.Second))
	got, n := timedGet(t, c, e.URL("web")+"/mib")
	if n != size {
		t.Fatalf("read %d bytes", n)
	}
	within(t, "1 MiB at 100 KiB/s", got, want, 0.10)

	// Off again, on the same (kept-alive) connection too.
	if _, err := e.SetListenerShaping("web", rules.Shaping{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := timedGet(t, c, e.URL("web")+"/mib"); got > want/4 {
		t.Errorf("unshaped 1 MiB took %s", got)
	}
	evs := e.Journal().Events("web")
	if len(evs) != 2 || !strings.Contains(evs[0].Note, "bandwidth=102400B/s") || evs[1].Note != "shaping: none" {
		t.Errorf("events %+v", evs)
	}
}

// Per-rule shaping: the body of the matching response only, with slices.
func TestRuleShape(t *testing.T) {
	t.Parallel() // mostly waiting: overlap with the other waiting tests
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	const size, rate = 300 << 10, 200 << 10
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/shaped"}, Action: rules.Action{
		BodySize: ptr[int64](size), Shape: &rules.Shaping{Bandwidth: rate}}})
	c := &http.Client{Transport: &http.Transport{}}
	got, n := timedGet(t, c, e.URL("web")+"/shaped")
	if n != size {
		t.Fatalf("read %d bytes", n)
	}
	within(t, "300 KiB at 200 KiB/s", got, time.Duration(float64(size)/rate*float64(time.Second)), 0.10)

	// 20 slices of 100 bytes, 20 ms apart: at least 19 gaps.
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/sliced"}, Action: rules.Action{
		BodySize: ptr[int64](2000), Shape: &rules.Shaping{SliceBytes: 100, SliceDelay: rules.Duration(20 * time.Millisecond)}}})
	if got, n := timedGet(t, c, e.URL("web")+"/sliced"); n != 2000 || got < 19*20*time.Millisecond {
		t.Errorf("sliced body: %d bytes in %s, want 2000 in >= 380ms", n, got)
	}
	// Latency before the body's write.
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/late"}, Action: rules.Action{Shape: &rules.Shaping{Latency: rules.Duration(300 * time.Millisecond)}}})
	if got, _ := timedGet(t, c, e.URL("web")+"/late"); got < 300*time.Millisecond {
		t.Errorf("latency 300ms: took %s", got)
	}
	// Unshaped paths are not slowed.
	if got, _ := timedGet(t, c, e.URL("web")+"/plain"); got > 250*time.Millisecond {
		t.Errorf("unshaped request took %s", got)
	}
	if _, err := e.AddRules(rules.Rule{Action: rules.Action{Shape: &rules.Shaping{ByteCap: 10, Bandwidth: -1}}}); err == nil ||
		!strings.Contains(err.Error(), "action.shape.byteCap: applies to a listener's connections only") || !strings.Contains(err.Error(), "action.shape.bandwidth: must be >= 0") {
		t.Errorf("bad shape: %v", err)
	}
}

// A byte cap closes the connection after that many bytes; slowClose
// delays closes.
func TestListenerByteCapAndSlowClose(t *testing.T) {
	e := startEmu(t, Config{Listeners: []ListenerConfig{
		{Name: "capped", Profile: HTTP, Shaping: &rules.Shaping{ByteCap: 5000}},
		{Name: "slow", Profile: HTTP, Shaping: &rules.Shaping{SlowClose: rules.Duration(500 * time.Millisecond)}},
	}})
	if err := e.PutObjects(objects.Spec{Path: "/big", Size: ptr[int64](100 << 10)}); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", e.Addr("capped"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	all, _ := io.ReadAll(c)
	if len(all) != 5000 {
		t.Errorf("capped connection sent %d bytes, want 5000", len(all))
	}
	head, body, _ := strings.Cut(string(all), "\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.1 200") || synth.Verify(synth.Object{Path: "/big", Size: 100 << 10, Version: "1"}, 0, []byte(body)) != nil {
		t.Errorf("capped bytes are not the start of the response")
	}

	s, err := net.Dial("tcp", e.Addr("slow"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io.WriteString(s, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	start := time.Now()
	if _, err := io.ReadAll(s); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < 500*time.Millisecond {
		t.Errorf("the close came after %s, want >= 500ms (slowClose)", got)
	}
}
