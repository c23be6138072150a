package rules

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Target is what a rule is matched against.
type Target struct {
	Listener string
	Method   string
	Path     string
	Header   http.Header
}

// Status is a rule with its counters.
type Status struct {
	Rule
	Seen      int64 `json:"seen"`      // requests that matched the rule's Match
	Fired     int64 `json:"fired"`     // requests the rule acted on
	Exhausted bool  `json:"exhausted"` // its budget is spent

	seq uint64 // insertion order, for the index
}

// DefaultMaxRules is how many rules a table holds unless told otherwise.
const DefaultMaxRules = 10000

// Table holds rules in the order they were added; the first rule that matches
// a request and has budget left fires. It is safe for concurrent use.
//
// Lookups go through an index (by exact path, by path prefix, and by
// listener for rules without a path), so thousands of rules on other paths
// cost a request only a few map lookups.
type Table struct {
	mu     sync.Mutex
	rules  []*Status
	idx    index
	seq    uint64 // insertion order of the next rule
	nextID int
	max    int
	check  func(prefix string, r *Rule) error
}

// NewTable returns an empty table holding at most DefaultMaxRules rules.
// check, if not nil, adds validation the rules cannot do alone (for example
// that a named listener exists).
func NewTable(check func(prefix string, r *Rule) error) *Table {
	return &Table{check: check, max: DefaultMaxRules, idx: newIndex()}
}

// SetMax sets how many rules the table may hold (n <= 0: DefaultMaxRules).
// Rules already stored stay.
func (t *Table) SetMax(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n <= 0 {
		n = DefaultMaxRules
	}
	t.max = n
}

// Add validates every rule and adds them all, or none: a batch with one bad
// rule changes nothing. It returns the rules as stored (with their ids).
func (t *Table) Add(rs ...Rule) ([]Rule, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	errs := &fielderr.List{}
	ids := map[string]bool{}
	for _, s := range t.rules {
		ids[s.ID] = true
	}
	for i := range rs {
		prefix := fmt.Sprintf("rules[%d]", i)
		if len(rs) == 1 {
			prefix = ""
		}
		errs.Merge(fielderr.Join(prefix, "rule"), rs[i].Validate(prefix))
		if t.check != nil {
			errs.Merge(fielderr.Join(prefix, "rule"), t.check(prefix, &rs[i]))
		}
		if rs[i].ID != "" {
			if ids[rs[i].ID] {
				errs.Add(fielderr.Join(prefix, "id"), "a rule with id %q exists already", rs[i].ID)
			}
			ids[rs[i].ID] = true
		}
	}
	if n := len(t.rules) + len(rs); n > t.max && len(rs) > 0 {
		errs.Add("rules", "the emulator holds at most %d rules (maxRules); it has %d and this adds %d: delete some first", t.max, len(t.rules), len(rs))
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	out := make([]Rule, len(rs))
	for i, r := range rs {
		for r.ID == "" {
			t.nextID++
			if id := fmt.Sprintf("r%d", t.nextID); !ids[id] {
				r.ID = id
			}
		}
		r.Match.Method = strings.ToUpper(r.Match.Method)
		st := &Status{Rule: r, seq: t.seq}
		t.seq++
		t.rules = append(t.rules, st)
		t.idx.add(st)
		out[i] = r
	}
	return out, nil
}

// List returns the rules with their counters.
func (t *Table) List() []Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Status, len(t.rules))
	for i, s := range t.rules {
		out[i] = *s
	}
	return out
}

// Delete removes the rule with the given id and reports whether it existed.
func (t *Table) Delete(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.rules {
		if s.ID == id {
			t.rules = append(t.rules[:i], t.rules[i+1:]...)
			t.idx.remove(s)
			return true
		}
	}
	return false
}

// Reset removes every rule and returns how many there were.
func (t *Table) Reset() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.rules)
	t.rules = nil
	t.idx = newIndex()
	return n
}

// Fire finds the first rule that matches tgt, has budget left and (with a
// probability) is chosen for this request, spends one unit of its budget
// and returns it. Every matching rule before it that is
// still skipping (Nth) counts the request as seen.
func (t *Table) Fire(tgt Target) (Rule, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.idx.candidates(tgt) {
		if s.Exhausted || !s.Match.Matches(tgt) {
			continue
		}
		s.Seen++
		if s.Seen < int64(max(s.Match.Nth, 1)) {
			continue
		}
		if s.Probability > 0 && !Chance(s.Seed, s.Seen, s.Probability) {
			continue // not this one; a later rule may fire
		}
		s.Fired++
		if b := s.Budget(); b >= 0 && s.Fired >= int64(b) {
			s.Exhausted = true
		}
		return s.Rule, true
	}
	return Rule{}, false
}

// Matches reports whether tgt satisfies every set field of m (Nth aside).
func (m *Match) Matches(tgt Target) bool {
	switch {
	case m.Listener != "" && m.Listener != tgt.Listener,
		m.Method != "" && !strings.EqualFold(m.Method, tgt.Method),
		m.Path != "" && m.Path != tgt.Path,
		m.PathPrefix != "" && !strings.HasPrefix(tgt.Path, m.PathPrefix):
		return false
	}
	for name, want := range m.Headers {
		vals := tgt.Header.Values(name)
		if len(vals) == 0 || (want != "*" && !slices.Contains(vals, want)) {
			return false
		}
	}
	return true
}
