package control_test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/control"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// fixture is an emulator with two http listeners, "web" and "other", and
// its control API.
type fixture struct {
	e      *originemu.Emulator
	api    *httptest.Server
	client *http.Client // for the emulator's listeners
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	e, err := originemu.Start(t.Context(), originemu.Config{
		Listeners: []originemu.ListenerConfig{
			{Name: "web", Profile: originemu.HTTP, Addr: "127.0.0.1:0"},
			{Name: "other", Profile: originemu.HTTP, Addr: "127.0.0.1:0"},
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
	return &fixture{e: e, api: api, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// call makes one control API request and returns the status and body.
func (f *fixture) call(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.api.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.api.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// callJSON makes a request, checks the status and decodes the answer.
func (f *fixture) callJSON(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	status, b := f.call(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
}

// get requests path from the named emulator listener.
func (f *fixture) get(t *testing.T, listener, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.e.URL(listener)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", listener, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s%s: reading body: %v", listener, path, err)
	}
	return resp.StatusCode, string(b)
}

func TestHealthAndListeners(t *testing.T) {
	f := newFixture(t)
	var h control.HealthResponse
	f.callJSON(t, "GET", "/v1/health", "", 200, &h)
	if h.Status != "ok" {
		t.Errorf("health status %q, want ok", h.Status)
	}
	var ls []originemu.ListenerInfo
	f.callJSON(t, "GET", "/v1/listeners", "", 200, &ls)
	if len(ls) != 2 || ls[0].Name != "web" || ls[1].Name != "other" {
		t.Fatalf("listeners %+v, want web and other", ls)
	}
	if ls[0].URL != f.e.URL("web") || ls[0].Profile != originemu.HTTP {
		t.Errorf("listener web %+v, want url %s and profile http", ls[0], f.e.URL("web"))
	}
}

func TestRulesLifecycle(t *testing.T) {
	f := newFixture(t)
	var one control.RulesResponse
	f.callJSON(t, "POST", "/v1/rules", `{"match":{"path":"/a"},"action":{"status":503}}`, 201, &one)
	if len(one.Rules) != 1 || one.Rules[0].ID == "" || one.Rules[0].Action.Status != 503 {
		t.Fatalf("stored %+v, want one rule with an id and status 503", one.Rules)
	}
	var two control.RulesResponse
	f.callJSON(t, "POST", "/v1/rules", `[{"id":"mine","match":{"path":"/b"},"times":2,"action":{"status":500}},
		{"match":{"pathPrefix":"/c"},"unlimited":true,"action":{"delay":"10ms"}}]`, 201, &two)
	if len(two.Rules) != 2 || two.Rules[0].ID != "mine" || two.Rules[1].ID == "" || two.Rules[1].Action.Delay.D() != 10*time.Millisecond {
		t.Fatalf("stored %+v, want rules mine and one with a generated id", two.Rules)
	}
	var list []rules.Status
	f.callJSON(t, "GET", "/v1/rules", "", 200, &list)
	if ids := statusIDs(list); !slices.Equal(ids, []string{one.Rules[0].ID, "mine", two.Rules[1].ID}) {
		t.Fatalf("rule ids %v", ids)
	}

	f.callJSON(t, "DELETE", "/v1/rules/mine", "", 204, nil)
	status, body := f.call(t, "DELETE", "/v1/rules/mine", "")
	if status != 404 || !strings.Contains(errorOf(t, body).Error, `"mine"`) {
		t.Errorf("deleting a deleted rule: %d %s, want 404 naming the id", status, body)
	}
	var del control.DeletedResponse
	f.callJSON(t, "DELETE", "/v1/rules", "", 200, &del)
	if del.Deleted != 2 {
		t.Errorf("deleted %d rules, want 2", del.Deleted)
	}
	f.callJSON(t, "GET", "/v1/rules", "", 200, &list)
	if len(list) != 0 {
		t.Errorf("rules after deleting all: %+v", list)
	}
	// An empty batch changes nothing and is no error.
	f.callJSON(t, "POST", "/v1/rules", `[]`, 201, &one)
	if len(one.Rules) != 0 {
		t.Errorf("empty batch stored %+v", one.Rules)
	}
}

func statusIDs(list []rules.Status) []string {
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return ids
}

func errorOf(t *testing.T, body []byte) control.ErrorResponse {
	t.Helper()
	var er control.ErrorResponse
	if err := json.Unmarshal(body, &er); err != nil || er.Error == "" {
		t.Fatalf("error answer %q is not an ErrorResponse: %v", body, err)
	}
	return er
}

func TestBadInputs(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name         string
		method, path string
		body         string
		status       int
		field        string // must be in fields, and in the message
		inMessage    string // must be in the message
	}{
		{"invalid rule field", "POST", "/v1/rules", `{"action":{"drip":{"bytes":0,"every":"1s"}}}`, 400, "action.drip.bytes", "must be > 0"},
		{"invalid rule in batch", "POST", "/v1/rules", `[{"action":{"status":503}},{"action":{"status":99}}]`, 400, "rules[1].action.status", "100-599"},
		{"unknown field", "POST", "/v1/rules", `{"action":{"drip":{"byts":1}}}`, 400, "action.drip.byts", `unknown field "byts"`},
		{"unknown top-level field", "POST", "/v1/rules", `{"tims":2}`, 400, "tims", "unknown field"},
		{"unknown field in batch", "POST", "/v1/rules", `[{},{"match":{"paht":"/a"}}]`, 400, "rules[1].match.paht", "unknown field"},
		{"wrong type", "POST", "/v1/rules", `{"times":"twice"}`, 400, "times", "integer"},
		{"bad duration", "POST", "/v1/rules", `{"action":{"delay":"soon"}}`, 400, "action.delay", "soon"},
		{"duration as number", "POST", "/v1/rules", `{"action":{"hold":{"timeout":5}}}`, 400, "action.hold.timeout", "duration"},
		{"unknown listener", "POST", "/v1/rules", `{"match":{"listener":"nope"},"action":{"status":500}}`, 400, "match.listener", "nope"},
		{"h2 fault on http listener", "POST", "/v1/rules", `{"match":{"listener":"web"},"action":{"rstStream":{}}}`, 400, "action", "h2"},
		{"malformed JSON", "POST", "/v1/rules", `{"action":`, 400, "body", "malformed JSON"},
		{"trailing data", "POST", "/v1/rules", `{} {}`, 400, "body", "malformed JSON"},
		{"empty body", "POST", "/v1/rules", ``, 400, "body", "empty"},
		{"not an object", "POST", "/v1/rules", `42`, 400, "body", "must be an object"},
		{"array of non-objects", "POST", "/v1/rules", `[1]`, 400, "body", "object"},
		{"bad object", "PUT", "/v1/objects", `{"path":"x"}`, 400, "objects[0].path", "must start with '/'"},
		{"bad object in batch", "PUT", "/v1/objects", `[{"path":"/a"},{"path":"/b","size":-1}]`, 400, "objects[1].size", ">= 0"},
		{"unknown object field", "PUT", "/v1/objects", `{"path":"/x","sise":1}`, 400, "objects[0].sise", "unknown field"},
		{"object path missing", "DELETE", "/v1/objects", ``, 400, "path", "required"},
		{"object path relative", "DELETE", "/v1/objects?path=x", ``, 400, "path", "'/'"},
		{"object not configured", "DELETE", "/v1/objects?path=/nope", ``, 404, "", `"/nope"`},
		{"rule not found", "DELETE", "/v1/rules/zzz", ``, 404, "", `"zzz"`},
		{"negative limit", "GET", "/v1/journal?limit=-1", ``, 400, "limit", "-1"},
		{"bad after", "GET", "/v1/journal?after=x", ``, 400, "after", `"x"`},
		{"unknown journal listener", "GET", "/v1/journal?listener=nope", ``, 400, "listener", "nope"},
		{"relative path prefix", "GET", "/v1/journal?pathPrefix=a", ``, 400, "pathPrefix", "'/'"},
		{"misspelt parameter", "GET", "/v1/journal?pathprefix=/a", ``, 400, "pathprefix", "unknown query parameter"},
		{"repeated parameter", "GET", "/v1/journal?limit=1&limit=2", ``, 400, "limit", "2 times"},
		{"wait n zero", "GET", "/v1/journal/wait?n=0", ``, 400, "n", ">= 1"},
		{"wait timeout too long", "GET", "/v1/journal/wait?timeout=10m", ``, 400, "timeout", "at most 5m0s"},
		{"wait timeout bad", "GET", "/v1/journal/wait?timeout=soon", ``, 400, "timeout", `"soon"`},
		{"wait timeout negative", "GET", "/v1/journal/wait?timeout=-1s", ``, 400, "timeout", "positive"},
		{"wait ended bad", "GET", "/v1/journal/wait?ended=maybe", ``, 400, "ended", `"maybe"`},
		{"wait bad journal parameter", "GET", "/v1/journal/wait?after=-2", ``, 400, "after", `"-2"`},
		{"parameter where none is taken", "GET", "/v1/health?verbose=1", ``, 400, "verbose", "unknown query parameter"},
		{"wrong method", "POST", "/v1/health", ``, 405, "", "POST"},
		{"wrong method on rule", "GET", "/v1/rules/r1", ``, 405, "", "DELETE"},
		{"unknown route", "GET", "/v1/nope", ``, 404, "", "/v1/nope"},
		// #12 item 9: every value that becomes a response header field is
		// refused with CR, LF or NUL in it (header injection), and JSON
		// null is no rule (it used to add a catch-all one).
		{"content type injection", "PUT", "/v1/objects", `{"path":"/x","contentType":"text/plain\r\nX-Evil: 1"}`, 400, "objects[0].contentType", "CR, LF or NUL"},
		{"cache control injection", "PUT", "/v1/objects", `{"path":"/x","cacheControl":"max-age=60\nX-Evil: 1"}`, 400, "objects[0].cacheControl", "CR, LF or NUL"},
		{"etag with NUL", "PUT", "/v1/objects", `{"path":"/x","etag":"\"a\u0000\""}`, 400, "objects[0].etag", "CR, LF or NUL"},
		{"object header value injection", "PUT", "/v1/objects", `{"path":"/x","headers":{"X-A":"1\r\nX-Evil: 1"}}`, 400, "objects[0].headers.X-A", "CR, LF or NUL"},
		{"object header name injection", "PUT", "/v1/objects", `{"path":"/x","headers":{"X-A: 1\r\nX-Evil":"1"}}`, 400, "objects[0].headers.X-A: 1\r\nX-Evil", "not a header name"},
		{"rule header value injection", "POST", "/v1/rules", `{"action":{"headers":{"X-A":"1\u0000"}}}`, 400, "action.headers.X-A", "CR, LF or NUL"},
		{"rule header name injection", "POST", "/v1/rules", `{"action":{"headers":{"X A":"1"}}}`, 400, "action.headers.X A", "not a header name"},
		{"redirect location injection", "POST", "/v1/rules", `{"action":{"redirect":{"location":"/a\r\nX-Evil: 1"}}}`, 400, "action.redirect.location", "must be a URL"},
		{"null rule", "POST", "/v1/rules", `null`, 400, "body", "null"},
		{"null rule in batch", "POST", "/v1/rules", `[{"action":{"status":503}},null]`, 400, "rules[1]", "null"},
		{"null object", "PUT", "/v1/objects", `null`, 400, "objects[0]", "null"},
		{"body too large", "POST", "/v1/rules", `[` + strings.Repeat(`{},`, control.MaxBodyBytes/3) + `{}]`, 413, "", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := f.call(t, tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d; body %s", status, tt.status, body)
			}
			er := errorOf(t, body)
			if !strings.Contains(er.Error, tt.inMessage) {
				t.Errorf("message %q does not contain %q", er.Error, tt.inMessage)
			}
			if tt.field != "" {
				if !slices.ContainsFunc(er.Fields, func(fe rules.FieldError) bool { return fe.Field == tt.field }) {
					t.Errorf("fields %+v do not name %q", er.Fields, tt.field)
				}
				if !strings.Contains(er.Error, tt.field) {
					t.Errorf("message %q does not name %q", er.Error, tt.field)
				}
			}
		})
	}
	// Nothing above changed anything.
	var list []rules.Status
	f.callJSON(t, "GET", "/v1/rules", "", 200, &list)
	var specs []objects.Spec
	f.callJSON(t, "GET", "/v1/objects", "", 200, &specs)
	if len(list) != 0 || len(specs) != 0 {
		t.Errorf("bad inputs left rules %+v and objects %+v", list, specs)
	}
}

func TestMethodNotAllowedSetsAllow(t *testing.T) {
	f := newFixture(t)
	resp, err := f.api.Client().Post(f.api.URL+"/v1/listeners", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || !strings.Contains(resp.Header.Get("Allow"), "GET") || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, Allow %q, Content-Type %q; want 405, GET allowed, JSON", resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"))
	}
}

func TestBatchIsAllOrNothing(t *testing.T) {
	f := newFixture(t)
	var stored control.RulesResponse
	f.callJSON(t, "POST", "/v1/rules", `{"id":"keep","match":{"path":"/k"},"action":{"status":500}}`, 201, &stored)
	before := f.e.Rules()

	for _, body := range []string{
		`[{"match":{"path":"/a"},"action":{"status":503}},{"match":{"path":"b"},"action":{"status":503}}]`, // invalid
		`[{"match":{"path":"/a"},"action":{"status":503}},{"match":{"path":"/b"},"actoin":{}}]`,            // unknown field
		`[{"match":{"path":"/a"},"action":{"status":503}},{"id":"keep"}]`,                                  // duplicate id
	} {
		status, b := f.call(t, "POST", "/v1/rules", body)
		if status != 400 {
			t.Fatalf("batch %s: status %d, want 400; %s", body, status, b)
		}
		if after := f.e.Rules(); !slices.Equal(statusIDs(after), statusIDs(before)) {
			t.Fatalf("batch %s half-applied: rules %v, want %v", body, statusIDs(after), statusIDs(before))
		}
	}
	// The rule a failed batch would have added does not fire.
	if status, _ := f.get(t, "web", "/a"); status != 200 {
		t.Errorf("GET /a: %d, want 200 (no rule)", status)
	}

	f.callJSON(t, "PUT", "/v1/objects", `{"path":"/o","body":"old"}`, 204, nil)
	status, b := f.call(t, "PUT", "/v1/objects", `[{"path":"/o","body":"new"},{"path":"/p","size":-5}]`)
	if status != 400 {
		t.Fatalf("bad object batch: %d %s, want 400", status, b)
	}
	if _, body := f.get(t, "web", "/o"); body != "old" {
		t.Errorf("object /o is %q after a failed batch, want old", body)
	}
}

func TestRuleFiresOnListener(t *testing.T) {
	f := newFixture(t)
	var stored control.RulesResponse
	f.callJSON(t, "POST", "/v1/rules", `{"match":{"listener":"web","path":"/flaky"},"times":1,"action":{"status":503}}`, 201, &stored)
	id := stored.Rules[0].ID
	var got []int
	for range 2 {
		status, _ := f.get(t, "web", "/flaky")
		got = append(got, status)
	}
	if !slices.Equal(got, []int{503, 200}) {
		t.Fatalf("statuses %v, want [503 200]", got)
	}
	var snap journal.Snapshot
	f.callJSON(t, "GET", "/v1/journal?pathPrefix=/flaky", "", 200, &snap)
	if len(snap.Requests) != 2 || snap.Requests[0].Rule != id || snap.Requests[1].Rule != "" {
		t.Fatalf("journal %+v, want the first request by rule %s", snap.Requests, id)
	}
	var list []rules.Status
	f.callJSON(t, "GET", "/v1/rules", "", 200, &list)
	if len(list) != 1 || list[0].Fired != 1 || !list[0].Exhausted {
		t.Errorf("rule status %+v, want fired once and exhausted", list)
	}
}

func TestJournalQuery(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/a/1", "/a/2", "/b"} {
		f.get(t, "web", p)
	}
	f.get(t, "other", "/a/3")
	paths := func(q string) []string {
		t.Helper()
		var snap journal.Snapshot
		f.callJSON(t, "GET", "/v1/journal"+q, "", 200, &snap)
		var out []string
		for _, r := range snap.Requests {
			out = append(out, r.Listener+" "+r.Path)
		}
		return out
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"web /a/1", "web /a/2", "web /b", "other /a/3"}},
		{"?pathPrefix=/a", []string{"web /a/1", "web /a/2", "other /a/3"}},
		{"?listener=other", []string{"other /a/3"}},
		{"?listener=web&pathPrefix=/a&limit=1", []string{"web /a/1"}},
		{"?method=GET&limit=2", []string{"web /a/1", "web /a/2"}},
		{"?method=POST", nil},
	}
	for _, tt := range tests {
		if got := paths(tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("journal%s: %v, want %v", tt.query, got, tt.want)
		}
	}
	var snap journal.Snapshot
	f.callJSON(t, "GET", "/v1/journal?listener=other", "", 200, &snap)
	if len(snap.Conns) != 1 || snap.Conns[0].Listener != "other" {
		t.Errorf("conns of listener other: %+v", snap.Conns)
	}
	f.callJSON(t, "GET", "/v1/journal?limit=2", "", 200, &snap)
	after := snap.Requests[1].Seq
	if got := paths(fmt.Sprintf("?after=%d", after)); !slices.Equal(got, []string{"web /b", "other /a/3"}) {
		t.Errorf("journal after %d: %v", after, got)
	}

	f.callJSON(t, "DELETE", "/v1/journal", "", 204, nil)
	if got := paths(""); len(got) != 0 {
		t.Errorf("journal after clearing: %v", got)
	}
}

func TestJournalWait(t *testing.T) {
	f := newFixture(t)
	var (
		wg     sync.WaitGroup
		status int
		body   []byte
	)
	wg.Go(func() {
		status, body = f.call(t, "GET", "/v1/journal/wait?pathPrefix=/w&n=2&ended=true&timeout=10s", "")
	})
	// Let the wait start, then satisfy it.
	time.Sleep(50 * time.Millisecond)
	f.get(t, "web", "/w/1")
	f.get(t, "web", "/other")
	f.get(t, "web", "/w/2")
	wg.Wait()
	if status != 200 {
		t.Fatalf("wait: %d %s, want 200", status, body)
	}
	var wr control.WaitResponse
	if err := json.Unmarshal(body, &wr); err != nil {
		t.Fatal(err)
	}
	if len(wr.Requests) != 2 || wr.Requests[0].Path != "/w/1" || wr.Requests[1].End != journal.EndComplete {
		t.Fatalf("wait answered %+v", wr.Requests)
	}

	// Already satisfied: answers at once.
	start := time.Now()
	f.callJSON(t, "GET", "/v1/journal/wait?listener=web&n=3", "", 200, &wr)
	if len(wr.Requests) != 3 || time.Since(start) > 5*time.Second {
		t.Errorf("satisfied wait: %d requests after %s", len(wr.Requests), time.Since(start))
	}

	// Not satisfied in time: 408 with what matched.
	status, body = f.call(t, "GET", "/v1/journal/wait?pathPrefix=/w&n=5&timeout=100ms", "")
	if status != http.StatusRequestTimeout {
		t.Fatalf("unsatisfied wait: %d %s, want 408", status, body)
	}
	er := errorOf(t, body)
	if er.Matched == nil || *er.Matched != 2 || len(er.Requests) != 2 || !strings.Contains(er.Error, "2 matched") {
		t.Errorf("timed-out wait answered %+v, want 2 matched", er)
	}
}

func TestHoldRelease(t *testing.T) {
	f := newFixture(t)
	f.callJSON(t, "POST", "/v1/rules", `{"match":{"path":"/held"},"times":2,"action":{"hold":{"name":"gate","timeout":"30s"}}}`, 201, nil)
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Go(func() { statuses[i], _ = f.get(t, "web", "/held") })
	}
	// Requests are journaled on arrival, before they wait at the hold.
	f.callJSON(t, "GET", "/v1/journal/wait?pathPrefix=/held&n=2&timeout=10s", "", 200, nil)
	var hs []originemu.HoldStatus
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.callJSON(t, "GET", "/v1/holds", "", 200, &hs)
		if len(hs) == 1 && hs[0].Waiting == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(hs) != 1 || hs[0].Name != "gate" || hs[0].Waiting != 2 {
		t.Fatalf("holds %+v, want gate with 2 waiting", hs)
	}
	var rel control.ReleaseResponse
	f.callJSON(t, "POST", "/v1/holds/gate/release", "", 200, &rel)
	if rel.Released != 2 {
		t.Errorf("released %d, want 2", rel.Released)
	}
	wg.Wait()
	if !slices.Equal(statuses, []int{200, 200}) {
		t.Errorf("held requests answered %v, want 200s", statuses)
	}
	f.callJSON(t, "POST", "/v1/holds/gate/release", "", 200, &rel)
	if rel.Released != 0 {
		t.Errorf("second release let %d go, want 0", rel.Released)
	}
	f.callJSON(t, "GET", "/v1/holds", "", 200, &hs)
	if len(hs) != 0 {
		t.Errorf("holds after release: %+v", hs)
	}
}

func TestObjects(t *testing.T) {
	f := newFixture(t)
	f.callJSON(t, "PUT", "/v1/objects", `{"path":"/o","body":"hello","cacheControl":"max-age=60"}`, 204, nil)
	f.callJSON(t, "PUT", "/v1/objects", `[{"path":"/b","size":10},{"path":"/a","body":"A"}]`, 204, nil)
	var specs []objects.Spec
	f.callJSON(t, "GET", "/v1/objects", "", 200, &specs)
	var paths []string
	for _, s := range specs {
		paths = append(paths, s.Path)
	}
	if !slices.Equal(paths, []string{"/a", "/b", "/o"}) {
		t.Fatalf("objects %v, want /a /b /o", paths)
	}
	if status, body := f.get(t, "web", "/o"); status != 200 || body != "hello" {
		t.Errorf("GET /o: %d %q, want the configured body", status, body)
	}
	f.callJSON(t, "DELETE", "/v1/objects?path=/o", "", 204, nil)
	if _, body := f.get(t, "web", "/o"); body == "hello" || len(body) != objects.DefaultSize {
		t.Errorf("GET /o after delete: %d bytes, want the default synthetic object", len(body))
	}
}

func TestReset(t *testing.T) {
	f := newFixture(t)
	f.callJSON(t, "POST", "/v1/rules", `{"match":{"path":"/r"},"action":{"status":500}}`, 201, nil)
	f.callJSON(t, "PUT", "/v1/objects", `{"path":"/o","body":"x"}`, 204, nil)
	f.get(t, "web", "/seen")
	f.callJSON(t, "POST", "/v1/reset", "", 204, nil)
	var list []rules.Status
	f.callJSON(t, "GET", "/v1/rules", "", 200, &list)
	var specs []objects.Spec
	f.callJSON(t, "GET", "/v1/objects", "", 200, &specs)
	var snap journal.Snapshot
	f.callJSON(t, "GET", "/v1/journal", "", 200, &snap)
	if len(list) != 0 || len(specs) != 0 || len(snap.Requests) != 0 {
		t.Errorf("after reset: rules %v, objects %v, requests %d", list, specs, len(snap.Requests))
	}
}

func TestCAPEM(t *testing.T) {
	f := newFixture(t)
	resp, err := f.api.Client().Get(f.api.URL + "/v1/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-pem-file" {
		t.Fatalf("ca.pem: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("ca.pem is not PEM: %q", b)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !cert.IsCA {
		t.Fatalf("ca.pem: %v (IsCA %v)", err, cert != nil && cert.IsCA)
	}
	if !cert.Equal(f.e.CA().Certificate()) {
		t.Error("ca.pem is not the emulator's CA")
	}
}

// The rule table is bounded (#12 item 9): a batch that would pass the cap
// is refused whole with an error naming the cap.
func TestRuleCap(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	e, err := originemu.Start(t.Context(), originemu.Config{
		Listeners: []originemu.ListenerConfig{{Name: "web", Profile: originemu.HTTP}},
		MaxRules:  3, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	api := httptest.NewServer(control.NewHandler(e, log))
	t.Cleanup(api.Close)
	f := &fixture{e: e, api: api}
	f.callJSON(t, "POST", "/v1/rules", `[{"match":{"path":"/a"}},{"match":{"path":"/b"}}]`, 201, nil)
	status, body := f.call(t, "POST", "/v1/rules", `[{"match":{"path":"/c"}},{"match":{"path":"/d"}}]`)
	if status != 400 {
		t.Fatalf("status %d, want 400: %s", status, body)
	}
	er := errorOf(t, body)
	if !strings.Contains(er.Error, "at most 3 rules (maxRules)") || !slices.ContainsFunc(er.Fields, func(fe rules.FieldError) bool { return fe.Field == "rules" }) {
		t.Fatalf("error %+v does not name the cap", er)
	}
	if n := len(e.Rules()); n != 2 {
		t.Fatalf("%d rules after a refused batch, want 2", n)
	}
}
