// Package h2 is a small HTTP/2 server for the emulator's fault-injecting
// origin, built on the frame layer of golang.org/x/net/http2 (Framer) and its
// HPACK codec rather than on a full server, because the emulator must control
// what ends up on the wire:
//
//   - request header fields are captured in arrival order, pseudo-header
//     fields included (wire.Request.Fields);
//   - response header fields are written exactly as the handler set them
//     (lower-cased, sorted by name): no Date, no Content-Length is added, and
//     only the connection-specific fields HTTP/2 forbids are dropped;
//   - an exchange can end with RST_STREAM carrying a chosen error code, with
//     GOAWAY carrying a chosen code, with a TCP FIN, or with a TCP reset
//     (wire.ResponseWriter.Abort).
//
// Server.ServeConn speaks HTTP/2 on one accepted connection, TLS with ALPN
// "h2" already negotiated or cleartext h2c with prior knowledge.
//
// Structure: server.go holds the Server and the connection's lifetime
// (shutdown, GOAWAY, close reasons); conn.go the single reader goroutine and
// the frame handlers; writer.go the serialised frame writer; flow.go flow
// control; body.go the request body pipe; request.go request construction;
// stream.go the per-stream handler goroutine; response.go the ResponseWriter;
// errors.go the error types.
package h2
