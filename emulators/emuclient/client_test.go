package emuclient_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/control"
	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

type fixture struct {
	e    *originemu.Emulator
	c    *emuclient.Client
	http *http.Client // for the emulator's listeners
}

// newFixture starts an emulator with an http listener "web" and an https
// listener "secure", its control API, and a client for it.
func newFixture(t *testing.T, opts ...emuclient.Option) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	e, err := originemu.Start(t.Context(), originemu.Config{
		Listeners: []originemu.ListenerConfig{
			{Name: "web", Profile: originemu.HTTP, Addr: "127.0.0.1:0"},
			{Name: "secure", Profile: originemu.HTTPS, Addr: "127.0.0.1:0"},
		},
		Logger: log,
	})
	if err != nil {
		t.Fatalf("starting the emulator: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	api := httptest.NewServer(control.NewHandler(e, log))
	t.Cleanup(api.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &fixture{
		e:    e,
		c:    emuclient.New(api.URL+"/", append([]emuclient.Option{emuclient.WithHTTPClient(api.Client())}, opts...)...),
		http: &http.Client{Transport: tr, Timeout: 10 * time.Second},
	}
}

func (f *fixture) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := f.http.Get(f.e.URL("web") + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("GET %s: reading body: %v", path, err)
	}
	return resp.StatusCode
}

func TestHealthAndListeners(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if err := f.c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	ls, err := f.c.Listeners(ctx)
	if err != nil {
		t.Fatalf("Listeners: %v", err)
	}
	if len(ls) != 2 || ls[0].Name != "web" || ls[1].Profile != originemu.HTTPS {
		t.Fatalf("Listeners: %+v", ls)
	}
	l, err := f.c.Listener(ctx, "secure")
	if err != nil || l.URL != f.e.URL("secure") {
		t.Errorf("Listener(secure): %+v, %v; want url %s", l, err, f.e.URL("secure"))
	}
	if _, err := f.c.Listener(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Listener(nope): %v, want an error naming it", err)
	}
}

func TestRules(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	stored, err := f.c.AddRules(ctx,
		rules.Rule{Match: rules.Match{Path: "/a"}, Times: 2, Action: rules.Action{Status: 503}},
		rules.Rule{ID: "named", Match: rules.Match{PathPrefix: "/b"}, Action: rules.Action{Status: 404}},
	)
	if err != nil {
		t.Fatalf("AddRules: %v", err)
	}
	if len(stored) != 2 || stored[0].ID == "" || stored[1].ID != "named" {
		t.Fatalf("AddRules stored %+v", stored)
	}
	got := []int{f.get(t, "/a"), f.get(t, "/a"), f.get(t, "/a"), f.get(t, "/b/x")}
	if !slices.Equal(got, []int{503, 503, 200, 404}) {
		t.Errorf("statuses %v, want [503 503 200 404]", got)
	}
	list, err := f.c.Rules(ctx)
	if err != nil {
		t.Fatalf("Rules: %v", err)
	}
	if len(list) != 2 || list[0].Fired != 2 || !list[0].Exhausted || list[1].Fired != 1 {
		t.Errorf("Rules: %+v", list)
	}

	if err := f.c.DeleteRule(ctx, "named"); err != nil {
		t.Fatalf("DeleteRule: %v", err)
	}
	err = f.c.DeleteRule(ctx, "named")
	if !emuclient.IsNotFound(err) || !strings.Contains(err.Error(), `"named"`) {
		t.Errorf("DeleteRule of a deleted rule: %v, want a 404 naming it", err)
	}
	n, err := f.c.DeleteRules(ctx)
	if err != nil || n != 1 {
		t.Errorf("DeleteRules: %d, %v; want 1 deleted", n, err)
	}
	if list, _ := f.c.Rules(ctx); len(list) != 0 {
		t.Errorf("Rules after DeleteRules: %+v", list)
	}
}

func TestAPIErrorNamesFields(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.c.AddRules(ctx, rules.Rule{ID: "keep", Action: rules.Action{Status: 500}}); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.AddRules(ctx,
		rules.Rule{Action: rules.Action{Status: 503}},
		rules.Rule{Action: rules.Action{Drip: &rules.Drip{Bytes: 0, Every: rules.Duration(time.Second)}}},
	)
	ae, ok := errors.AsType[*emuclient.APIError](err)
	if !ok {
		t.Fatalf("AddRules with a bad rule: %v, want an *APIError", err)
	}
	if ae.Status != 400 || !slices.ContainsFunc(ae.Fields, func(fe rules.FieldError) bool { return fe.Field == "rules[1].action.drip.bytes" }) {
		t.Errorf("APIError %+v, want 400 naming rules[1].action.drip.bytes", ae)
	}
	for _, want := range []string{"adding rules", "400", "rules[1].action.drip.bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if list, _ := f.c.Rules(ctx); len(list) != 1 {
		t.Errorf("a failed batch changed the rules: %+v", list)
	}

	err = f.c.PutObjects(ctx, objects.Spec{Path: "no-slash"})
	if ae, ok := errors.AsType[*emuclient.APIError](err); !ok || ae.Status != 400 || len(ae.Fields) != 1 || ae.Fields[0].Field != "objects[0].path" {
		t.Errorf("PutObjects with a bad path: %v, want a 400 naming objects[0].path", err)
	}
	_, err = f.c.Journal(ctx, journal.Query{Listener: "nope"})
	if ae, ok := errors.AsType[*emuclient.APIError](err); !ok || ae.Status != 400 || !strings.Contains(err.Error(), "listener") {
		t.Errorf("Journal of an unknown listener: %v, want a 400 naming the parameter", err)
	}
}

func TestAPIErrorString(t *testing.T) {
	tests := []struct {
		err  emuclient.APIError
		want string
	}{
		{emuclient.APIError{Status: 404, Message: `no rule with id "x"`}, `originemu control API: 404 Not Found: no rule with id "x"`},
		{emuclient.APIError{Status: 400, Message: "invalid", Fields: []rules.FieldError{{Field: "times", Problem: "must be >= 0"}}},
			"originemu control API: 400 Bad Request: invalid; times: must be >= 0"},
		{emuclient.APIError{Status: 400, Message: "times: must be >= 0", Fields: []rules.FieldError{{Field: "times", Problem: "must be >= 0"}}},
			"originemu control API: 400 Bad Request: times: must be >= 0"},
		{emuclient.APIError{Status: 502}, "originemu control API: 502 Bad Gateway"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestObjects(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	body := "hello"
	if err := f.c.PutObjects(ctx, objects.Spec{Path: "/o", Body: &body}, objects.Spec{Path: "/n", NoRanges: true}); err != nil {
		t.Fatalf("PutObjects: %v", err)
	}
	specs, err := f.c.Objects(ctx)
	if err != nil || len(specs) != 2 || specs[0].Path != "/n" || specs[1].Body == nil || *specs[1].Body != "hello" {
		t.Fatalf("Objects: %+v, %v", specs, err)
	}
	if err := f.c.DeleteObject(ctx, "/o"); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	if err := f.c.DeleteObject(ctx, "/o"); !emuclient.IsNotFound(err) {
		t.Errorf("DeleteObject of a deleted object: %v, want 404", err)
	}
}

func TestJournalAndWaits(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, p := range []string{"/j/1", "/k", "/j/2"} {
		f.get(t, p)
	}
	snap, err := f.c.Journal(ctx, journal.Query{PathPrefix: "/j"})
	if err != nil || len(snap.Requests) != 2 || snap.Requests[1].Path != "/j/2" || len(snap.Conns) == 0 {
		t.Fatalf("Journal: %+v, %v", snap, err)
	}
	snap, err = f.c.Journal(ctx, journal.Query{Listener: "web", AfterSeq: snap.Requests[0].Seq, Limit: 1})
	if err != nil || len(snap.Requests) != 1 || snap.Requests[0].Path != "/k" {
		t.Fatalf("Journal after the first: %+v, %v", snap.Requests, err)
	}

	// A wait satisfied later by requests made meanwhile.
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(50 * time.Millisecond)
		f.get(t, "/w/1")
		f.get(t, "/w/2")
	})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reqs, err := f.c.WaitEnded(wctx, journal.Query{PathPrefix: "/w"}, 2)
	wg.Wait()
	if err != nil || len(reqs) != 2 || reqs[1].End != journal.EndComplete {
		t.Fatalf("WaitEnded: %+v, %v", reqs, err)
	}
	reqs, err = f.c.WaitRequests(wctx, journal.Query{Listener: "web", Limit: 1}, 5)
	if err != nil || len(reqs) != 5 {
		t.Fatalf("WaitRequests (already satisfied, Limit ignored): %d requests, %v", len(reqs), err)
	}

	// A wait that cannot be satisfied ends with ctx, returning what matched.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	reqs, err = f.c.WaitRequests(short, journal.Query{PathPrefix: "/w"}, 3)
	if !errors.Is(err, context.DeadlineExceeded) || len(reqs) != 2 {
		t.Fatalf("unsatisfiable WaitRequests: %d requests, %v; want the 2 that matched and DeadlineExceeded", len(reqs), err)
	}
	if !strings.Contains(err.Error(), "2 matched") {
		t.Errorf("error %q does not say how many matched", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the wait took %s past a 300ms deadline", d)
	}
	if _, err := f.c.WaitRequests(ctx, journal.Query{}, 0); err == nil {
		t.Error("WaitRequests with n=0 did not fail")
	}

	if err := f.c.ClearJournal(ctx); err != nil {
		t.Fatalf("ClearJournal: %v", err)
	}
	if snap, _ := f.c.Journal(ctx, journal.Query{}); len(snap.Requests) != 0 {
		t.Errorf("journal after ClearJournal: %d requests", len(snap.Requests))
	}
}

func TestWaitPollsAgain(t *testing.T) {
	// Polls shorter than the wait: the client asks again after each 408.
	f := newFixture(t, emuclient.WithPollTimeout(50*time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(300 * time.Millisecond)
		f.get(t, "/late")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	reqs, err := f.c.WaitRequests(ctx, journal.Query{PathPrefix: "/late"}, 1)
	wg.Wait()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("WaitRequests: %+v, %v", reqs, err)
	}
}

func TestHoldsAndRelease(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.c.AddRules(ctx, rules.Rule{Match: rules.Match{Path: "/held"}, Action: rules.Action{Hold: &rules.Hold{Name: "gate"}}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var status int
	wg.Go(func() { status = f.get(t, "/held") })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := f.c.WaitRequests(wctx, journal.Query{PathPrefix: "/held"}, 1); err != nil {
		t.Fatal(err)
	}
	var hs []originemu.HoldStatus
	for hs == nil && wctx.Err() == nil {
		var err error
		if hs, err = f.c.Holds(ctx); err != nil {
			t.Fatalf("Holds: %v", err)
		}
		if len(hs) == 0 {
			hs = nil
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(hs) != 1 || hs[0].Name != "gate" || hs[0].Waiting != 1 {
		t.Fatalf("Holds: %+v", hs)
	}
	n, err := f.c.Release(ctx, "gate")
	if err != nil || n != 1 {
		t.Fatalf("Release: %d, %v; want 1", n, err)
	}
	wg.Wait()
	if status != 200 {
		t.Errorf("released request answered %d", status)
	}
}

func TestResetAndCA(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.c.AddRules(ctx, rules.Rule{Action: rules.Action{Status: 500}}); err != nil {
		t.Fatal(err)
	}
	f.get(t, "/x")
	if err := f.c.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	list, _ := f.c.Rules(ctx)
	snap, _ := f.c.Journal(ctx, journal.Query{})
	if len(list) != 0 || len(snap.Requests) != 0 {
		t.Errorf("after Reset: rules %+v, %d requests", list, len(snap.Requests))
	}

	pem, err := f.c.CAPEM(ctx)
	if err != nil || !strings.HasPrefix(string(pem), "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("CAPEM: %q, %v", pem, err)
	}
	pool, err := f.c.CertPool(ctx)
	if err != nil {
		t.Fatalf("CertPool: %v", err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "origin.example"}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(f.e.URL("secure") + "/tls")
	if err != nil {
		t.Fatalf("GET over TLS trusting the fetched CA: %v", err)
	}
	resp.Body.Close()
	snap, err = f.c.Journal(ctx, journal.Query{Listener: "secure"})
	if err != nil || len(snap.Conns) != 1 || snap.Conns[0].SNI != "origin.example" {
		t.Errorf("journal of the TLS listener: %+v, %v", snap.Conns, err)
	}
}

func TestTransportErrors(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := emuclient.New("http://" + addr)
	err = c.Health(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "checking health: ") || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Health of a closed port: %v, want a wrapped connection refused", err)
	}
	if _, ok := errors.AsType[*emuclient.APIError](err); ok {
		t.Errorf("a transport error is an APIError: %v", err)
	}
	_, err = emuclient.New("not a url").Rules(t.Context())
	if err == nil || !strings.Contains(err.Error(), "listing rules") || !strings.Contains(err.Error(), "not a url") {
		t.Errorf("bad base URL: %v", err)
	}

	// A server that is not the control API.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "teapot here", http.StatusTeapot)
	}))
	defer srv.Close()
	_, err = emuclient.New(srv.URL).AddRules(t.Context(), rules.Rule{})
	ae, ok := errors.AsType[*emuclient.APIError](err)
	if !ok || ae.Status != http.StatusTeapot || ae.Message != "teapot here" {
		t.Errorf("non-API answer: %v", err)
	}
}

// #16 item 2 through the control API: refuse for a while, see the state in
// the listener list, then serving again when the duration ends.
func TestSetListenerState(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	li, err := f.c.SetListenerState(ctx, "web", originemu.StateChange{State: originemu.Refuse, For: rules.Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if li.State != originemu.Refuse || li.Profile != originemu.HTTP || li.Until.IsZero() {
		t.Fatalf("answer %+v", li)
	}
	listed, err := f.c.Listener(ctx, "web")
	if err != nil || listed.State != originemu.Refuse {
		t.Fatalf("listed %+v, %v", listed, err)
	}
	if _, err := f.http.Get(f.e.URL("web") + "/x"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while refusing: %v", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := f.e.Journal().WaitEvents(ctx2, "web", 2); err != nil {
		t.Fatal(err)
	}
	snap, err := f.c.Journal(ctx, journal.Query{Listener: "web"})
	if err != nil || len(snap.Events) != 2 || snap.Events[1].Cause != "timer" || snap.Events[1].To != "http" {
		t.Fatalf("journal events %+v, %v", snap.Events, err)
	}
	if st := f.get(t, "/x"); st != 200 {
		t.Fatalf("after the outage: %d", st)
	}
	_, err = f.c.SetListenerState(ctx, "web", originemu.StateChange{State: "sideways"})
	var ae *emuclient.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(err.Error(), `state: unknown profile "sideways"`) {
		t.Fatalf("bad state: %v", err)
	}
	if _, err := f.c.SetListenerState(ctx, "nope", originemu.StateChange{State: originemu.Refuse}); !emuclient.IsNotFound(err) {
		t.Fatalf("unknown listener: %v", err)
	}
}

func TestSetListenerShaping(t *testing.T) {
	f := newFixture(t)
	li, err := f.c.SetListenerShaping(t.Context(), "web", rules.Shaping{Latency: rules.Duration(200 * time.Millisecond)})
	if err != nil || li.Shaping == nil || li.Shaping.Latency.D() != 200*time.Millisecond {
		t.Fatalf("%+v %v", li, err)
	}
	start := time.Now()
	if st := f.get(t, "/x"); st != 200 || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("status %d after %s, want 200 after >= 200ms", st, time.Since(start))
	}
	_, err = f.c.SetListenerShaping(t.Context(), "web", rules.Shaping{Bandwidth: -5})
	var ae *emuclient.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(err.Error(), "shaping.bandwidth") {
		t.Fatalf("bad shaping: %v", err)
	}
}
