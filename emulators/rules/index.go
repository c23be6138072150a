package rules

import "slices"

// index finds the rules that may match a request without trying them all.
// Every rule is in exactly one bucket: by its exact path, by its path
// prefix, or (with neither) by its listener ("" for any listener). A
// request's candidates are the buckets it can match, merged back into
// insertion order so the first-match semantics stay those of a list.
type index struct {
	exact    map[string][]*Status
	prefix   map[string][]*Status
	prefixes []int // the distinct prefix lengths in prefix, ascending
	other    map[string][]*Status
}

func newIndex() index {
	return index{exact: map[string][]*Status{}, prefix: map[string][]*Status{}, other: map[string][]*Status{}}
}

func (ix *index) bucket(s *Status) (map[string][]*Status, string) {
	switch m := s.Match; {
	case m.Path != "":
		return ix.exact, m.Path
	case m.PathPrefix != "":
		return ix.prefix, m.PathPrefix
	default:
		return ix.other, m.Listener
	}
}

func (ix *index) add(s *Status) {
	b, k := ix.bucket(s)
	b[k] = append(b[k], s)
	if s.Match.Path == "" && s.Match.PathPrefix != "" {
		if i, found := slices.BinarySearch(ix.prefixes, len(k)); !found {
			ix.prefixes = slices.Insert(ix.prefixes, i, len(k))
		}
	}
}

func (ix *index) remove(s *Status) {
	b, k := ix.bucket(s)
	b[k] = slices.DeleteFunc(b[k], func(o *Status) bool { return o == s })
	if len(b[k]) > 0 {
		return
	}
	delete(b, k)
	if s.Match.Path == "" && s.Match.PathPrefix != "" {
		ix.prefixes = slices.DeleteFunc(ix.prefixes, func(n int) bool {
			return n == len(k) && !ix.hasPrefixLen(n)
		})
	}
}

func (ix *index) hasPrefixLen(n int) bool {
	for p := range ix.prefix {
		if len(p) == n {
			return true
		}
	}
	return false
}

// candidates returns the rules that may match tgt, in insertion order.
func (ix *index) candidates(tgt Target) []*Status {
	var lists [][]*Status
	add := func(l []*Status) {
		if len(l) > 0 {
			lists = append(lists, l)
		}
	}
	add(ix.exact[tgt.Path])
	for _, n := range ix.prefixes {
		if n > len(tgt.Path) {
			break
		}
		add(ix.prefix[tgt.Path[:n]])
	}
	add(ix.other[""])
	if tgt.Listener != "" {
		add(ix.other[tgt.Listener])
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	var out []*Status
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.SortFunc(out, func(a, b *Status) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return out
}
