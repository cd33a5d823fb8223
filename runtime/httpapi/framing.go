package httpapi

import (
	"bytes"
	"errors"
	"net"
	"strconv"
)

// Request smuggling. A request with both Content-Length and Transfer-Encoding can be framed two ways: a
// proxy in front that reads one header and this server, which reads the other (net/http lets
// Transfer-Encoding win and drops Content-Length, RFC 9112 §6.3), disagree on where the next request
// starts, and the rest of the body becomes a request nobody checked. RFC 9112 §6.1 allows a server to
// treat such a message as an error; this one answers 400 and closes the connection.
//
// net/http removes Content-Length from such a request before any handler sees it, so the check runs on
// the bytes: the listener's connections follow the requests on them (framer) exactly as net/http frames
// them — the head up to its blank line, then a Content-Length body or a chunked one with its trailer —
// hold each head back until it is complete, and in a head that has both headers rename every
// Content-Length to smuggledHeader, a name of the same length. net/http then frames the request by its
// Transfer-Encoding, as it would have, and the handler answers it 400 with Connection: close, in its
// turn among pipelined requests, logged and counted as every request.

// smuggledHeader replaces Content-Length in a head that also has Transfer-Encoding. It has the length of
// "Content-Length", so the bytes keep their places. A client that sends it itself is refused alike.
const smuggledHeader = "X-Smuggled-Len"

// maxHead bounds a head held back: beyond it (larger than any header block net/http accepts, which then
// refuses it) the bytes pass unchecked.
const maxHead = 1<<20 + 64<<10

// maxChunkLine and maxTrailer bound a chunk-size line and a trailer section as net/http does.
const (
	maxChunkLine = 4096
	maxTrailer   = 64 << 10
)

type frameState uint8

const (
	inHead      frameState = iota // reading a request head
	inBody                        // remain bytes of a Content-Length body
	inChunkLine                   // a chunk-size line
	inChunkData                   // remain bytes of chunk data
	inChunkEnd                    // the CRLF after chunk data (remain: bytes of it left)
	inTrailer                     // the trailer section after the last chunk
	lost                          // net/http refuses what came (and closes the connection): pass everything
)

// framer follows the requests of one connection as net/http frames them.
type framer struct {
	state  frameState
	remain int64
	held   []byte // the head (or chunk-size line, or trailer line) read so far
	line   int    // where the line being read starts in held
}

// feed takes the bytes read from the connection and returns those net/http may read now, in order:
// all of a body at once, a head only when it is complete (renamed where it has both headers).
func (f *framer) feed(p []byte, out []byte) []byte {
	for len(p) > 0 {
		switch f.state {
		case lost:
			return append(out, p...)
		case inBody, inChunkData:
			n := int(min(int64(len(p)), f.remain))
			out = append(out, p[:n]...)
			p = p[n:]
			if f.remain -= int64(n); f.remain == 0 {
				if f.state == inBody {
					f.state = inHead
				} else {
					f.state, f.remain = inChunkEnd, 2
				}
			}
		case inChunkEnd:
			if p[0] != "\r\n"[2-f.remain] {
				f.state = lost
				continue
			}
			out = append(out, p[0])
			p = p[1:]
			if f.remain--; f.remain == 0 {
				f.state = inChunkLine
			}
		default: // inHead, inChunkLine, inTrailer: whole lines
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				f.held = append(f.held, p...)
				p = nil
				if len(f.held) > maxHead || (f.state == inChunkLine && len(f.held) > maxChunkLine) || (f.state == inTrailer && len(f.held) > maxTrailer) {
					out = f.flush(out)
				}
				continue
			}
			start := f.line // where this line starts in held
			f.held = append(f.held, p[:i+1]...)
			p = p[i+1:]
			f.line = len(f.held)
			switch f.state {
			case inHead:
				if len(f.held) > maxHead {
					out = f.flush(out)
					continue
				}
				line := bytes.TrimSuffix(f.held[start:len(f.held)-1], []byte("\r"))
				switch {
				case start == 0 && len(line) == 0: // a blank request line: net/http refuses it
					out = f.flush(out)
				case start == 0 || len(line) > 0: // the request line, or a header line: the head goes on
				default: // the blank line: the head is complete
					out = append(out, f.frameHead()...)
				}
			case inChunkLine:
				out = append(out, f.held...)
				f.chunkLine(f.held)
				f.held, f.line = f.held[:0], 0
			case inTrailer:
				out = append(out, f.held...)
				if len(bytes.TrimSuffix(f.held[:len(f.held)-1], []byte("\r"))) == 0 {
					f.state = inHead // the blank line that ends the trailer (or the empty trailer)
				}
				f.held, f.line = f.held[:0], 0
			}
		}
	}
	return out
}

// flush returns the bytes held back and gives up following the connection (net/http gets what there
// is, and an error after it).
func (f *framer) flush(out []byte) []byte {
	out = append(out, f.held...)
	f.held, f.line, f.state = nil, 0, lost
	return out
}

// frameHead is called with a complete head in held: it returns the head as net/http shall read it and
// sets the state for what follows.
func (f *framer) frameHead() []byte {
	head := f.held
	f.held, f.line = nil, 0
	lines := bytes.Split(head, []byte("\n"))
	request := bytes.Fields(lines[0])
	var cl, te [][]byte // values
	var clAt []int      // offsets of the Content-Length names in head
	smuggled := false
	offset := len(lines[0]) + 1
	last := -1 // 0: cl, 1: te, for continuation lines
	for _, raw := range lines[1:] {
		line := bytes.TrimSuffix(raw, []byte("\r"))
		at := offset
		offset += len(raw) + 1
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') { // an obsolete line folding
			switch last {
			case 0:
				cl[len(cl)-1] = append(append(cl[len(cl)-1], ' '), bytes.TrimSpace(line)...)
			case 1:
				te[len(te)-1] = append(append(te[len(te)-1], ' '), bytes.TrimSpace(line)...)
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.Clone(bytes.TrimSpace(value))
		last = -1
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			cl, clAt, last = append(cl, value), append(clAt, at), 0
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			te, last = append(te, value), 1
		case bytes.EqualFold(name, []byte(smuggledHeader)):
			smuggled = true
		}
	}
	switch {
	case len(cl) > 0 && len(te) > 0:
		for _, at := range clAt {
			copy(head[at:], smuggledHeader)
		}
		f.state = lost // answered 400 with Connection: close; nothing after it is read
		return head
	case smuggled || len(request) != 3:
		f.state = lost // refused (the handler's 400, or net/http's)
		return head
	}
	http11 := !bytes.Equal(request[2], []byte("HTTP/1.0"))
	switch {
	case len(te) > 0 && http11:
		if len(te) != 1 || !bytes.EqualFold(te[0], []byte("chunked")) {
			f.state = lost // net/http answers an unknown Transfer-Encoding and closes
			return head
		}
		f.state = inChunkLine
	case len(cl) > 0:
		n, err := contentLength(cl)
		if err != nil {
			f.state = lost
			return head
		}
		f.state, f.remain = inBody, n
		if n == 0 {
			f.state = inHead
		}
	default:
		f.state = inHead
	}
	return head
}

// contentLength reads Content-Length values as net/http does: equal values, one non-negative integer.
func contentLength(vals [][]byte) (int64, error) {
	for _, v := range vals[1:] {
		if !bytes.Equal(v, vals[0]) {
			return 0, errors.New("differing Content-Length values")
		}
	}
	s := string(vals[0])
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("not a length")
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// chunkLine reads a chunk-size line (with its line end) as net/http does: CRLF-terminated with no other
// CR, optional whitespace and extension, at most 16 hexadecimal digits; 0 ends the body.
func (f *framer) chunkLine(line []byte) {
	body, ok := bytes.CutSuffix(line, []byte("\r\n"))
	if !ok || bytes.IndexByte(body, '\r') >= 0 {
		f.state = lost
		return
	}
	body = bytes.TrimRight(body, " \t")
	if i := bytes.IndexByte(body, ';'); i >= 0 {
		body = bytes.TrimRight(body[:i], " \t")
	}
	if len(body) == 0 || len(body) > 16 {
		f.state = lost
		return
	}
	n, err := strconv.ParseUint(string(body), 16, 64)
	if err != nil || n > 1<<62 {
		f.state = lost
		return
	}
	if n == 0 {
		f.state = inTrailer
		return
	}
	f.state, f.remain = inChunkData, int64(n)
}

// framedReader reads a connection through a framer.
type framedReader struct {
	src  net.Conn
	f    framer
	buf  []byte // what was read from the connection
	out  []byte // what net/http may read, not yet read
	next int    // out[next:] is unread
	err  error  // a read error to report once out is drained
}

func (c *framedReader) Read(p []byte) (int, error) {
	for c.next == len(c.out) {
		if c.err != nil {
			return 0, c.err
		}
		c.out, c.next = c.out[:0], 0
		// A body passes straight into p: no copy, and never past its end.
		if c.f.state == lost || (c.f.state == inBody && len(c.f.held) == 0) {
			q := p
			if c.f.state == inBody {
				q = p[:min(int64(len(p)), c.f.remain)]
			}
			n, err := c.src.Read(q)
			if c.f.state == inBody {
				if c.f.remain -= int64(n); c.f.remain == 0 {
					c.f.state = inHead
				}
			}
			return n, err
		}
		if c.buf == nil {
			c.buf = make([]byte, 4096)
		}
		n, err := c.src.Read(c.buf)
		c.out = c.f.feed(c.buf[:n], c.out)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// net/http aborts its background read with a deadline: keep what is held for the
				// next read.
				if len(c.out) == 0 {
					return 0, err
				}
			} else {
				if len(c.f.held) > 0 {
					c.out = c.f.flush(c.out) // an incomplete head: net/http reads it, then the error
				}
				c.err = err
			}
			if len(c.out) == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, c.out[c.next:])
	c.next += n
	return n, nil
}
