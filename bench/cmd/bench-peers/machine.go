package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU is the whole machine's CPU time (every core) from /proc/stat:
// busy (user, nice, system, irq, softirq: the work of every process and
// the kernel, the origin and wrk included) and idle (idle and iowait).
// Steal is in neither. Between two samples it says how much of the
// machine a round used and how much it left idle: on this 2-vCPU machine
// a round is CPU-bound, so req/s is about the busy time a request costs
// the whole machine, and the idle time nobody used.
type machineCPU struct {
	busy, idle time.Duration
}

// readMachineCPU samples /proc/stat; it fails where there is none (not
// Linux) or it cannot be read or parsed.
func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, fmt.Errorf("sampling the machine's CPU: %w", err)
	}
	return parseProcStat(string(b))
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat, in USER_HZ.
func parseProcStat(s string) (machineCPU, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: first line %q is not the aggregate cpu line with at least 7 times", line)
	}
	var v [7]int64 // user nice system idle iowait irq softirq
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return machineCPU{}, fmt.Errorf("/proc/stat: cpu time %d is %q, not a count of ticks", i+1, f[i+1])
		}
		v[i] = n
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6]
	idle := v[3] + v[4]
	return machineCPU{busy: time.Duration(busy) * clockTick, idle: time.Duration(idle) * clockTick}, nil
}

// since is the machine's use between an earlier sample a and m: busy µs
// per request over n requests, and the idle share of all the time.
func (m machineCPU) since(a machineCPU, n int64) (busyPerReq, idleShare float64, err error) {
	busy, idle := m.busy-a.busy, m.idle-a.idle
	switch {
	case busy < 0 || idle < 0:
		return 0, 0, fmt.Errorf("the machine's CPU time went back between the samples (busy %v, idle %v)", busy, idle)
	case busy+idle == 0:
		return 0, 0, errors.New("no machine CPU time passed between the samples")
	case n <= 0:
		return 0, 0, fmt.Errorf("%d requests in the round: no time per request", n)
	}
	return float64(busy.Microseconds()) / float64(n), float64(idle) / float64(busy+idle), nil
}
