package originemu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// freshGet asks url on a new connection (no keep-alive), so each request
// sees the listener's state of the moment.
func freshGet(t *testing.T, url string, timeout time.Duration) (int, error) {
	t.Helper()
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func setState(t *testing.T, e *Emulator, name string, ch StateChange) ListenerInfo {
	t.Helper()
	li, err := e.SetListenerState(name, ch)
	if err != nil {
		t.Fatalf("SetListenerState(%s, %+v): %v", name, ch, err)
	}
	return li
}

// #16 item 2: an http listener switched to refuse mid-test refuses new
// connections on the same port, and serves again when switched back.
func TestRuntimeRefuseAndBack(t *testing.T) {
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	url := e.URL("web") + "/x"
	if st, err := freshGet(t, url, 5*time.Second); err != nil || st != 200 {
		t.Fatalf("before: %d %v", st, err)
	}
	li := setState(t, e, "web", StateChange{State: Refuse})
	if li.State != Refuse || li.Profile != HTTP || li.Addr != e.Addr("web") {
		t.Fatalf("info after the change: %+v", li)
	}
	_, err := freshGet(t, url, 5*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while refusing: err %v, want connection refused", err)
	}
	setState(t, e, "web", StateChange{State: Serving})
	if st, err := freshGet(t, url, 5*time.Second); err != nil || st != 200 {
		t.Fatalf("after switching back: %d %v", st, err)
	}
	evs := e.Journal().Events("web")
	if len(evs) != 2 || evs[0].From != "http" || evs[0].To != "refuse" || evs[1].To != "http" || evs[0].Cause != "api" || evs[1].At.Before(evs[0].At) {
		t.Fatalf("journal events %+v", evs)
	}
	if got := e.Journal().Query(journal.Query{Listener: "web"}).Requests; len(got) != 2 {
		t.Fatalf("%d requests journaled, want 2 (none while refusing)", len(got))
	}
	if conns := e.Journal().Query(journal.Query{Listener: "web"}).Conns; len(conns) != 2 || conns[0].State != "http" || conns[1].State != "http" {
		t.Fatalf("journal conns %+v", conns)
	}
}

// #16 item 2: blackhole for 2 s, then serving again by itself.
func TestRuntimeBlackholeForDuration(t *testing.T) {
	t.Parallel() // mostly waiting: overlap with the other waiting tests
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	const d = 2 * time.Second
	url := e.URL("web") + "/x"
	li := setState(t, e, "web", StateChange{State: Blackhole, For: rules.Duration(d)})
	if li.State != Blackhole || li.Until.Sub(li.Since) != d {
		t.Fatalf("info %+v, want blackhole until since+%s", li, d)
	}
	// A request during the outage is accepted and never answered.
	_, err := freshGet(t, url, 500*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("during the blackhole: err %v, want a timeout", err)
	}
	waitConns(t, e, journal.Query{Listener: "web"}, 1, func(c *journal.Conn) bool { return c.State == "blackhole" })
	ctx, cancel := context.WithTimeout(t.Context(), d+10*time.Second)
	defer cancel()
	evs, err := e.Journal().WaitEvents(ctx, "web", 2)
	if err != nil {
		t.Fatalf("waiting for the change back: %v (have %+v)", err, evs)
	}
	back := evs[1]
	if back.To != "http" || back.From != "blackhole" || back.Cause != "timer" {
		t.Fatalf("second event %+v, want blackhole -> http by the timer", back)
	}
	// The change back came after the configured duration, not before.
	if got := back.At.Sub(evs[0].At); got < d {
		t.Fatalf("back after %s, want >= %s", got, d)
	}
	if st, err := freshGet(t, url, 5*time.Second); err != nil || st != 200 {
		t.Fatalf("after the blackhole: %d %v", st, err)
	}
	if li, _ := e.Listener("web"); li.State != HTTP || !li.Until.IsZero() {
		t.Fatalf("info after %+v", li)
	}
}

// Every other state on the same address: syn-drop makes the dial time
// out, the TLS faults present their certificates, and existing
// connections are reset when asked.
func TestRuntimeStates(t *testing.T) {
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "tls", Profile: HTTPS}}})
	addr := e.Addr("tls")

	setState(t, e, "tls", StateChange{State: SYNDrop})
	if c, err := (&net.Dialer{Timeout: 300 * time.Millisecond}).Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("syn-drop: the dial succeeded")
	} else if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Fatalf("syn-drop: dial err %v, want a timeout", err)
	}

	for _, tc := range []struct {
		state Profile
		check func(error) bool
	}{
		{TLSExpired, func(err error) bool { _, ok := errors.AsType[x509.CertificateInvalidError](err); return ok }},
		{TLSWrongName, func(err error) bool { _, ok := errors.AsType[x509.HostnameError](err); return ok }},
		{TLSUntrusted, func(err error) bool { _, ok := errors.AsType[x509.UnknownAuthorityError](err); return ok }},
		{Serving, func(err error) bool { return err == nil }},
	} {
		setState(t, e, "tls", StateChange{State: tc.state})
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.test"})
		if err == nil {
			c.Close()
		}
		if !tc.check(err) {
			t.Errorf("%s: handshake err %v", tc.state, err)
		}
	}

	// An open keep-alive connection is reset by a change that asks so.
	c := clientFor(t, e, "tls", "origin.test")
	if _, _, err := get(t, c, "https://"+addr+"/a"); err != nil {
		t.Fatal(err)
	}
	li := setState(t, e, "tls", StateChange{State: Refuse, Existing: ResetConns})
	evs := e.Journal().Events("tls")
	// (The handshake-only connections above may still be open too.)
	if last := evs[len(evs)-1]; last.Affected < 1 || last.Existing != "reset" {
		t.Fatalf("event %+v, want the open connection reset", last)
	}
	id := e.Journal().Query(journal.Query{PathPrefix: "/a"}).Requests[0].ConnID
	waitConns(t, e, journal.Query{Listener: "tls"}, 1, func(c *journal.Conn) bool { return c.ID == id && c.Closed.After(li.Since) })
}

func TestRuntimeStateBadInput(t *testing.T) {
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}, {Name: "down", Profile: Refuse}}})
	for _, tc := range []struct {
		name string
		ch   StateChange
		want string
	}{
		{"nope", StateChange{State: Refuse}, `listener: no listener named "nope"`},
		{"web", StateChange{}, "state: is required"},
		{"web", StateChange{State: "down"}, `state: unknown profile "down"`},
		{"web", StateChange{State: Refuse, Existing: "drop"}, `existing: must be keep, reset or stall, got "drop"`},
		{"web", StateChange{State: Refuse, For: -1}, "for: must not be negative"},
		{"down", StateChange{State: Serving}, "serves nothing"},
	} {
		_, err := e.SetListenerState(tc.name, tc.ch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err %v, want %q", tc.name, tc.ch, err, tc.want)
		}
	}
	// A listener started as refuse can be told what to serve as.
	setState(t, e, "down", StateChange{State: HTTP})
	if st, err := freshGet(t, e.URL("down")+"/x", 5*time.Second); err != nil || st != 200 {
		t.Fatalf("refuse listener switched to http: %d %v", st, err)
	}
}

// A change with existing=stall freezes open connections (nothing more is
// sent) until the next change.
func TestRuntimeStallExisting(t *testing.T) {
	t.Parallel() // mostly waiting: overlap with the other waiting tests
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/slow"}, Action: rules.Action{
		BodySize: ptr[int64](1 << 20), Drip: &rules.Drip{Bytes: 100, Every: rules.Duration(10 * time.Millisecond)}}})
	resp, err := http.Get(e.URL("web") + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	setState(t, e, "web", StateChange{State: Blackhole, Existing: StallConns})
	// Unstalled, the drip sends 5000 bytes in 0.5 s; stalled, at most the
	// few hundred bytes already in flight arrive.
	got := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(resp.Body, make([]byte, 5000))
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("5000 bytes arrived on a stalled connection (err %v)", err)
	case <-time.After(1500 * time.Millisecond):
	}
	setState(t, e, "web", StateChange{State: Serving})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("after the stall: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not resume after the change back")
	}
}

// Sharing the port between a listener's sockets must not let a second
// emulator take an address the first one serves.
func TestAddressInUse(t *testing.T) {
	a := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
	_, err := Start(t.Context(), Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP, Addr: a.Addr("web")}}})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("second emulator on %s: %v, want address in use", a.Addr("web"), err)
	}
}
