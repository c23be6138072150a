package target

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/emulators/control"
	"github.com/edgeconform/edgeconform/emulators/gcsemu"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/s3emu"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Emulators is one emulator set on loopback with every listener of the
// topology (topology.Listeners and BucketListeners) and its control API:
// what the in-process reference uses, and what the peer runner shares
// between peers.
type Emulators struct {
	Emulator *originemu.Emulator
	// ControlURL is the control API's base URL.
	ControlURL string
	// Ports maps a listener name to its port (the default-port listeners
	// excepted).
	Ports map[string]int
	// DefaultPortIP is the loopback address whose ports 80 and 443 the
	// port80 and port443 listeners have (PRT-3), "" when they cannot be
	// bound (not root).
	DefaultPortIP string

	closers []func()
}

// EmulatorS3 is the S3-compatible bucket the emulators' s3 listener
// serves, with its test credential (never a real one).
func EmulatorS3() *topology.S3Bucket {
	return &topology.S3Bucket{Bucket: refS3Bucket, Region: refS3Region, AccessKeyID: refS3KeyID,
		SecretVersion: refS3SecretVer, Secret: refS3Secret}
}

// StartEmulators starts the emulators and their control API. They live
// until Close, not until ctx ends.
func StartEmulators(ctx context.Context, log *slog.Logger) (e *Emulators, err error) {
	e = &Emulators{Ports: map[string]int{}, DefaultPortIP: defaultPortIP()}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	var ecfg originemu.Config
	for _, l := range topology.Listeners() {
		lc := originemu.ListenerConfig{Name: l.Name, Profile: l.Profile}
		if l.DefaultPort != 0 {
			if e.DefaultPortIP == "" {
				continue
			}
			lc.Addr = net.JoinHostPort(e.DefaultPortIP, strconv.Itoa(l.DefaultPort))
		}
		ecfg.Listeners = append(ecfg.Listeners, lc)
	}
	// The bucket services: a private S3-compatible bucket verifying SigV4,
	// a private Cloud Storage bucket read with a bearer token. Specs put
	// their objects through the services' own APIs.
	s3, err := s3emu.New(s3emu.Config{Region: refS3Region, Credentials: map[string]string{refS3KeyID: refS3Secret},
		Buckets: []s3emu.BucketConfig{{Name: refS3Bucket}}})
	if err != nil {
		return nil, fmt.Errorf("the S3 emulator: %w", err)
	}
	gcs, err := gcsemu.New(gcsemu.Config{Tokens: []string{refGCSToken}, Buckets: []gcsemu.BucketConfig{{Name: refBucket}}})
	if err != nil {
		return nil, fmt.Errorf("the Cloud Storage emulator: %w", err)
	}
	for _, l := range topology.BucketListeners() {
		lc := originemu.ListenerConfig{Name: l.Name, Profile: l.Profile, Backend: s3}
		if l.Name == topology.ListenerGCS {
			lc.Backend = gcs
		}
		ecfg.Listeners = append(ecfg.Listeners, lc)
	}
	ecfg.Logger = log
	emu, err := originemu.Start(context.WithoutCancel(ctx), ecfg)
	if err != nil {
		return nil, fmt.Errorf("starting the emulators: %w", err)
	}
	e.Emulator = emu
	e.closers = append(e.closers, func() { emu.Close() })

	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("control API listener: %w", err)
	}
	csrv := &http.Server{Handler: control.NewHandler(emu, log), ReadHeaderTimeout: 10 * time.Second}
	go csrv.Serve(cln)
	e.closers = append(e.closers, func() { csrv.Close() })
	e.ControlURL = "http://" + cln.Addr().String()

	for _, l := range append(topology.Listeners(), topology.BucketListeners()...) {
		if l.DefaultPort != 0 {
			continue
		}
		_, port, _ := net.SplitHostPort(emu.Addr(l.Name))
		e.Ports[l.Name], _ = strconv.Atoi(port)
	}
	return e, nil
}

// Close stops the emulators and the control API.
func (e *Emulators) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}
