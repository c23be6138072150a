package upstream

import (
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
)

// The transports are bounded: the least recently used target is dropped
// first, and a dropped target gets a fresh transport when it comes back.
func TestTransportsBounded(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	c.maxTargets = 2
	target := func(host string) Target {
		return Target{Protocol: config.ProtocolHTTP, Address: "127.0.0.1", Port: 80, Host: host}
	}
	rt := func(host string) any {
		r, err := c.roundTripper(target(host))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := rt("a.test")
	rt("b.test")
	if rt("a.test") != a {
		t.Fatal("a cached target got a new transport")
	}
	rt("c.test") // evicts b, the least recently used
	if len(c.rts) != 2 {
		t.Fatalf("%d targets kept, want 2", len(c.rts))
	}
	if _, ok := c.rts[target("b.test")]; ok {
		t.Fatal("b (least recently used) was kept")
	}
	if rt("a.test") != a {
		t.Fatal("a (recently used) was evicted")
	}
}
