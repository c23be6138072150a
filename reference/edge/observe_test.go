package edge

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// LOG-1: every client request is counted in the metrics whether or not
// its log record is written: logVisit returns early when the log is above
// Info (edgecache serve --log-level warn; issue #14), after the counts.
func TestMetricsWithoutLogRecords(t *testing.T) {
	for _, c := range []struct {
		level   slog.Level
		records int
	}{{slog.LevelInfo, 2}, {slog.LevelWarn, 0}} {
		t.Run(c.level.String(), func(t *testing.T) {
			logs := &syncBuffer{}
			r := newRigLevel(t, testConfig, logs, c.level)
			r.logs = logs
			for i := range 2 {
				if s := r.status("GET", "client.example", fmt.Sprintf("/plain/m%d", i)); s != 200 {
					t.Fatalf("GET: status %d", s)
				}
			}
			counted := func() float64 {
				var m dto.Metric
				if err := r.metrics.statusCounter(200).Write(&m); err != nil {
					t.Fatal(err)
				}
				return m.GetCounter().GetValue()
			}
			for deadline := time.Now().Add(5 * time.Second); counted() < 2 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond) // the record and the count follow the response's last byte
			}
			if n := counted(); n != 2 {
				t.Errorf("edgecache_requests_total{status=\"200\"} = %v, want 2", n)
			}
			for i := range c.records { // the counts come before the record: wait for it
				r.waitRecord("client request", func(m map[string]any) bool { return m["uri"] == fmt.Sprintf("/plain/m%d", i) })
			}
			if n := len(r.logs.records("client request")); n != c.records {
				t.Errorf("%d client request records at level %v, want %d", n, c.level, c.records)
			}
		})
	}
}
