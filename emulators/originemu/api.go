package originemu

import (
	"fmt"
	"slices"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/testca"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Listeners describes the running listeners in configuration order.
func (e *Emulator) Listeners() []ListenerInfo {
	out := make([]ListenerInfo, len(e.listeners))
	for i, l := range e.listeners {
		out[i] = e.info(l)
	}
	return out
}

// Listener describes the named listener.
func (e *Emulator) Listener(name string) (ListenerInfo, bool) {
	l, ok := e.byName[name]
	if !ok {
		return ListenerInfo{}, false
	}
	return e.info(l), true
}

// URL is the base URL of the named listener ("" if there is none).
func (e *Emulator) URL(name string) string {
	l, _ := e.Listener(name)
	return l.URL
}

// Addr is the host:port of the named listener ("" if there is none).
func (e *Emulator) Addr(name string) string {
	l, _ := e.Listener(name)
	return l.Addr
}

// AddRules adds rules, all or none, and returns them with their ids. A bad
// rule's error is a rules.Errors naming every bad field.
func (e *Emulator) AddRules(rs ...rules.Rule) ([]rules.Rule, error) { return e.rules.Add(rs...) }

// Rules lists the rules with their counters.
func (e *Emulator) Rules() []rules.Status { return e.rules.List() }

// DeleteRules removes every rule at once and returns how many there were.
func (e *Emulator) DeleteRules() int { return e.rules.Reset() }

// DeleteRule removes a rule and reports whether it existed.
func (e *Emulator) DeleteRule(id string) bool { return e.rules.Delete(id) }

// PutObjects configures objects, all or none.
func (e *Emulator) PutObjects(specs ...objects.Spec) error { return e.objects.Put(specs...) }

// Objects lists the configured objects.
func (e *Emulator) Objects() []objects.Spec { return e.objects.List() }

// DeleteObject forgets an object's configuration.
func (e *Emulator) DeleteObject(path string) bool { return e.objects.Delete(path) }

// Object is the spec the emulator serves for path (configured or default).
func (e *Emulator) Object(path string) objects.Spec { return e.objects.Get(path) }

// Journal is the record of connections and requests.
func (e *Emulator) Journal() *journal.Journal { return e.journal }

// Holds lists the barriers that have requests waiting.
func (e *Emulator) Holds() []HoldStatus { return e.holds.list() }

// Release lets every request waiting at the named hold go and returns how
// many there were.
func (e *Emulator) Release(name string) int { return e.holds.release(name) }

// Reset removes every rule and object configuration, releases every hold,
// forgets path budgets and clears the journal.
func (e *Emulator) Reset() {
	e.rules.Reset()
	e.objects.Reset()
	e.holds.releaseAll()
	e.paths.reset()
	e.journal.Reset()
}

// CA is the test CA that signs the serving listeners' certificates.
func (e *Emulator) CA() *testca.CA { return e.ca }

// CAPEM is the test CA's certificate as PEM, for clients to trust.
func (e *Emulator) CAPEM() []byte { return e.ca.CertPEM() }

// checkRule validates what a rule says about listeners.
func (e *Emulator) checkRule(prefix string, r *rules.Rule) error {
	var errs rules.Errors
	field := func(f string) string { return fielderr.Join(prefix, f) }
	if name := r.Match.Listener; name != "" {
		l, ok := e.byName[name]
		switch {
		case !ok:
			errs = append(errs, rules.FieldError{Field: field("match.listener"), Problem: fmt.Sprintf("no listener named %q (have %v)", name, e.listenerNames())})
		case !l.Profile.Serves():
			errs = append(errs, rules.FieldError{Field: field("match.listener"), Problem: fmt.Sprintf("listener %q (%s) answers no requests", name, l.Profile)})
		case r.Action.NeedsH2() && !l.Profile.MaySpeakH2():
			errs = append(errs, rules.FieldError{Field: field("action"), Problem: fmt.Sprintf("rstStream and goAway need h2, but listener %q (%s) never speaks h2", name, l.Profile)})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (e *Emulator) listenerNames() []string {
	names := make([]string, 0, len(e.listeners))
	for _, l := range e.listeners {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}
