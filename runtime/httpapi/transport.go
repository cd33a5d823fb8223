package httpapi

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/google/uuid"
)

// net/http refuses a request it cannot parse (a header value with a control character, a header block
// over MaxHeaderBytes, an unknown Transfer-Encoding, a malformed request line) before any handler runs,
// writing a plain-text answer straight to the connection in one Write and closing it. These are the
// headers of that answer, and nothing else starts with them right after its status line: a handler's
// answer always carries Date and its headers in sorted order (Connection before Content-Type).
const plainRefusal = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// TransportErrors wraps ln so that net/http's own refusals of unparseable requests go out in the API's
// error envelope with an X-Request-Id, as every other error does: status 400, code invalid_request; and
// so that a request with both Content-Length and Transfer-Encoding reaches the handler marked, to be
// refused the same way (framing.go).
// (Go answers 431 for an oversized header block and 501 for an unknown Transfer-Encoding; the API has
// neither status, and both are the client's malformed request.) Each refusal is logged with its id.
func TransportErrors(ln net.Listener, log *slog.Logger) net.Listener {
	return &refusalListener{Listener: ln, log: log}
}

type refusalListener struct {
	net.Listener
	log *slog.Logger
}

func (l *refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c, in: framedReader{src: c}, log: l.log}, nil
}

type refusalConn struct {
	net.Conn
	in  framedReader // marks requests with both Content-Length and Transfer-Encoding (framing.go)
	log *slog.Logger
}

func (c *refusalConn) Read(p []byte) (int, error) { return c.in.Read(p) }

// CloseWrite keeps net/http's graceful close (it half-closes a TCP connection before hanging up).
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *refusalConn) Write(p []byte) (int, error) {
	status, reason, ok := parseRefusal(p)
	if !ok {
		return c.Conn.Write(p)
	}
	id := uuid.NewString()
	message := refusalMessage(status, reason)
	body := encode(map[string]any{"error": map[string]any{
		"type": "invalid_request_error", "code": "invalid_request", "message": message, "request_id": id}})
	head := fmt.Sprintf("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Request-Id: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", id, len(body))
	// Logged before the answer goes out, so that whoever reads the answer finds the line.
	if c.log != nil {
		c.log.Info("request", "request_id", id, "status", 400, "code", "invalid_request", "operation", "unparsed",
			"refused", strconv.Itoa(status)+" "+reason, "remote", c.RemoteAddr().String())
	}
	if _, err := c.Conn.Write(append([]byte(head), body...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// parseRefusal recognises net/http's plain-text refusal and returns its status and reason ("invalid
// header value"; empty when Go gave none).
func parseRefusal(p []byte) (int, string, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok {
		return 0, "", false
	}
	line, after, ok := bytes.Cut(rest, []byte("\r\n"))
	if !ok || !bytes.HasPrefix(after, []byte(plainRefusal[2:])) || len(line) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	var reason string
	if _, r, found := bytes.Cut(line, []byte(": ")); found {
		reason = string(r)
	}
	return status, reason, true
}

func refusalMessage(status int, reason string) string {
	switch {
	case status == 431:
		return "The request's header block is too large."
	case status == 501:
		return "The request's Transfer-Encoding is not supported; send the body with Content-Length or chunked."
	case status == 505:
		return "The request's HTTP version is not supported."
	case reason != "":
		// Go's reasons are fixed texts ("invalid header value", "missing required Host header"); they
		// never quote the request.
		return "The request is not valid HTTP: " + reason + "."
	default:
		return "The request is not valid HTTP."
	}
}
