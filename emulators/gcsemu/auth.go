package gcsemu

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/journal"
)

// access is what a request wants to do.
type access int

const (
	accessRead access = iota
	accessWrite
)

// authorize decides whether r may read or write bucket b (nil: the bucket
// does not exist, checked by the caller afterwards) and notes the outcome
// in the journal. See the package comment for the rules.
func (s *Server) authorize(r *http.Request, b *bucket, a access) error {
	if _, ok := signedBy(r); ok {
		return nil // verified, and noted, by verifySignedURL
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		journal.Annotate(r.Context(), "gcs: anonymous")
		switch {
		case b == nil:
			return nil
		case a == accessRead && !b.public:
			return errAccessDenied("storage.objects.get")
		case a == accessWrite && len(s.tokens) > 0 && !b.anonWrite:
			return errAccessDenied("storage.objects.create")
		}
		return nil
	}
	scheme, token, _ := strings.Cut(auth, " ")
	if !strings.EqualFold(scheme, "Bearer") || !s.validToken(strings.TrimSpace(token)) {
		journal.Annotate(r.Context(), "gcs: bad token")
		return errBadToken()
	}
	journal.Annotate(r.Context(), "gcs: token ok")
	return nil
}

func (s *Server) validToken(t string) bool {
	ok := false
	for _, want := range s.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(want)) == 1 {
			ok = true
		}
	}
	return ok
}
