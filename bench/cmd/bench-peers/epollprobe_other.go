//go:build !linux

package main

import (
	"context"
	"errors"
)

// The epoll probe (epollprobe_linux.go) needs Linux's epoll.
const (
	epollProbeFlag      = "serve-epoll-probe"
	epollProbeSupported = false
)

func epollProbeMain(context.Context, []string) error {
	return errors.New("the epoll probe runs on Linux only")
}
