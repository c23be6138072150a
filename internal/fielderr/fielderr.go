// Package fielderr reports bad input as every problem at once, each named by
// the path of the field it is in ("rules[2].action.drip.bytes",
// "routing.hostRules[0].hosts"). It is shared by both sides: the emulators
// validate their rules, objects and bucket configs with it, and the
// reference's config loader (reference/config) and CLI report a bad
// EdgeCacheService with it. It imports nothing of the module.
package fielderr

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field.
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

func (e FieldError) Error() string { return e.Field + ": " + e.Problem }

// Errors is every problem found in an input.
type Errors []FieldError

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// As returns err's field errors if it holds any.
func As(err error) (Errors, bool) {
	var es Errors
	ok := errors.As(err, &es)
	return es, ok
}

// List collects problems under a common field prefix.
type List struct {
	Prefix string
	Errs   Errors
}

// Add records a problem with field (joined to the prefix with a dot).
func (l *List) Add(field, format string, args ...any) {
	l.Errs = append(l.Errs, FieldError{Field: Join(l.Prefix, field), Problem: fmt.Sprintf(format, args...)})
}

// Merge appends err's problems, or err as one problem named by field.
func (l *List) Merge(field string, err error) {
	if err == nil {
		return
	}
	if es, ok := As(err); ok {
		l.Errs = append(l.Errs, es...)
		return
	}
	l.Add(field, "%v", err)
}

// Err is the collected problems, or nil.
func (l *List) Err() error {
	if len(l.Errs) == 0 {
		return nil
	}
	return l.Errs
}

// Join joins a prefix and a field name with a dot; either may be empty.
func Join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}
