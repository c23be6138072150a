package gcsemu

import (
	"net/http"
	"net/url"
	"strconv"
)

// preconditions are the generation conditions of a request
// (x-goog-if-generation-match and friends, or ifGenerationMatch query
// parameters). nil means "not given".
type preconditions struct {
	genMatch, genNotMatch, metaMatch, metaNotMatch *int64
}

// check tests the conditions against the current object (nil if none). A
// generation match of 0 means "must not exist".
func (p preconditions) check(o *object) error {
	gen, meta := int64(0), int64(0)
	if o != nil {
		gen, meta = o.generation, o.metageneration
	}
	switch {
	case p.genMatch != nil && *p.genMatch != gen:
		return errPrecondition("ifGenerationMatch")
	case p.genNotMatch != nil && *p.genNotMatch == gen:
		return errPrecondition("ifGenerationNotMatch")
	case p.metaMatch != nil && (o == nil || *p.metaMatch != meta):
		return errPrecondition("ifMetagenerationMatch")
	case p.metaNotMatch != nil && o != nil && *p.metaNotMatch == meta:
		return errPrecondition("ifMetagenerationNotMatch")
	}
	return nil
}

// headerConditions reads the XML API's x-goog-if-* headers.
func headerConditions(h http.Header) (preconditions, error) {
	return parseConditions(func(k string) string { return h.Get(k) },
		"X-Goog-If-Generation-Match", "X-Goog-If-Generation-Not-Match",
		"X-Goog-If-Metageneration-Match", "X-Goog-If-Metageneration-Not-Match")
}

// queryConditions reads the JSON API's if* query parameters.
func queryConditions(q url.Values) (preconditions, error) {
	return parseConditions(q.Get, "ifGenerationMatch", "ifGenerationNotMatch",
		"ifMetagenerationMatch", "ifMetagenerationNotMatch")
}

func parseConditions(get func(string) string, names ...string) (preconditions, error) {
	var p preconditions
	dst := []**int64{&p.genMatch, &p.genNotMatch, &p.metaMatch, &p.metaNotMatch}
	for i, n := range names {
		v := get(n)
		if v == "" {
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil || x < 0 {
			return p, errBadRequest("invalid %s: %q", n, v)
		}
		*dst[i] = &x
	}
	return p, nil
}

// generationParam reads an explicit generation (query "generation" or
// header x-goog-generation); 0 means none.
func generationParam(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil || g <= 0 {
		return 0, errBadRequest("invalid generation %q", v)
	}
	return g, nil
}
