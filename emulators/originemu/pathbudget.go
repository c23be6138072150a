package originemu

import (
	"sync"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// pathBudgetCap bounds how many distinct path-encoded scripts with a
// budget (times= or nth=) are counted; the oldest are forgotten first.
const pathBudgetCap = 10000

// pathBudgets counts requests per path-encoded script that has times= or
// nth=, keyed by listener and the full request path, so "/_emu/status=503/
// times=2/x" fails the first two requests for that path and then serves it.
type pathBudgets struct {
	mu    sync.Mutex
	cap   int
	seen  map[string]*pathCount
	order []string
}

func newPathBudgets(capacity int) *pathBudgets {
	return &pathBudgets{cap: capacity, seen: map[string]*pathCount{}}
}

// fire counts one request for key and reports whether r fires for it.
func (p *pathBudgets) fire(key string, r *rules.Rule) bool {
	if r.Unlimited && r.Match.Nth <= 1 && r.Probability == 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.seen[key]
	if !ok {
		if len(p.order) >= p.cap {
			delete(p.seen, p.order[0])
			p.order = p.order[1:]
		}
		p.order = append(p.order, key)
		c = &pathCount{}
		p.seen[key] = c
	}
	c.seen++
	switch {
	case c.seen < int64(max(r.Match.Nth, 1)),
		!rules.Chance(r.Seed, c.seen, r.Probability),
		!r.Unlimited && c.fired >= int64(r.Budget()):
		return false
	}
	c.fired++
	return true
}

// pathCount is what one path script has seen and fired for.
type pathCount struct{ seen, fired int64 }

func (p *pathBudgets) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = map[string]*pathCount{}
	p.order = nil
}
