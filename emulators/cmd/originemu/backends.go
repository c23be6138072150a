package main

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/edgeconform/edgeconform/emulators/gcsemu"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/s3emu"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// backendConfig makes a listener a bucket service: exactly one of S3 and
// GCS. In the config file:
//
//	listeners: [{name: s3, profile: http}]
//	backends:
//	  s3: {s3: {region: eu-west-1, credentials: {AKID: SECRET}, buckets: [{name: media}]}}
type backendConfig struct {
	S3  *s3emu.Config  `json:"s3,omitempty"`
	GCS *gcsemu.Config `json:"gcs,omitempty"`
}

// attachBackends builds each configured bucket service and attaches it to
// its listener. Every problem is reported, each named by its field path.
func attachBackends(cfg *originemu.Config, backends map[string]backendConfig) error {
	var l fielderr.List
	for _, name := range sortedKeys(backends) {
		b := backends[name]
		field := fielderr.MapKey("backends", name)
		i := slices.IndexFunc(cfg.Listeners, func(lc originemu.ListenerConfig) bool { return lc.Name == name })
		if i < 0 {
			l.Add(field, "no listener named %q", name)
			continue
		}
		var h http.Handler
		var err error
		switch {
		case (b.S3 == nil) == (b.GCS == nil):
			l.Add(field, "set exactly one of s3 and gcs")
			continue
		case b.S3 != nil:
			h, err = s3emu.New(*b.S3)
			field += ".s3"
		default:
			h, err = gcsemu.New(*b.GCS)
			field += ".gcs"
		}
		if err != nil {
			if es, ok := fielderr.As(err); ok {
				for _, e := range es {
					l.Add(fielderr.Join(field, e.Field), "%s", e.Problem)
				}
			} else {
				l.Add(field, "%v", err)
			}
			continue
		}
		cfg.Listeners[i].Backend = h
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("backends: %w", err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
