package plugins

import (
	"bytes"
	"log/slog"
	"sync"
	"time"
)

// Limits on what a plugin's output may add to the server's log.
const (
	maxLineBytes   = 8 << 10 // a longer line is cut (truncated: true) and the rest of it dropped
	linesPerSecond = 100     // lines logged per second and plugin, past a burst of lineBurst
	lineBurst      = 1000
	dropWarnEvery  = 10 * time.Second
)

// lineLogger logs what a plugin writes on one stream, one slog record per line. A plugin flooding its
// output cannot flood the server's log or memory: lines are cut at maxLineBytes, and its lines share an
// outputLimit.
type lineLogger struct {
	log    *slog.Logger
	plugin string
	stream string
	limit  *outputLimit
	mu     sync.Mutex
	buf    []byte
	skip   bool // the rest of the current line was cut
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !w.skip {
			if room := maxLineBytes - len(w.buf); len(part) > room {
				w.buf = append(w.buf, part[:room]...)
				w.emit(true)
				w.skip = true
			} else {
				w.buf = append(w.buf, part...)
			}
		}
		if i < 0 {
			break
		}
		if !w.skip {
			w.emit(false)
		}
		w.buf, w.skip = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// emit logs the line in w.buf, if the limit allows. The caller holds w.mu.
func (w *lineLogger) emit(truncated bool) {
	line := bytes.TrimSpace(w.buf)
	w.buf = w.buf[:0]
	if len(line) == 0 {
		return
	}
	dropped, ok := w.limit.take(w.log, w.plugin)
	if !ok {
		return
	}
	attrs := []any{"plugin", w.plugin, "stream", w.stream, "line", string(line)}
	if truncated {
		attrs = append(attrs, "truncated", true)
	}
	if dropped > 0 {
		attrs = append(attrs, "dropped", dropped)
	}
	w.log.Info("plugin output", attrs...)
}

// outputLimit is a token bucket of log lines: lineBurst, refilled at linesPerSecond.
type outputLimit struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
	warned  time.Time
}

// take reports whether one more line may be logged, and how many were dropped since the last one.
// Dropping is announced at most every dropWarnEvery.
func (l *outputLimit) take(log *slog.Logger, plugin string) (dropped int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = lineBurst
	} else {
		l.tokens = min(lineBurst, l.tokens+now.Sub(l.last).Seconds()*linesPerSecond)
	}
	l.last = now
	if l.tokens < 1 {
		if l.dropped == 0 && now.Sub(l.warned) >= dropWarnEvery {
			l.warned = now
			log.Warn("plugin output over the limit; dropping lines", "plugin", plugin, "lines_per_second", linesPerSecond, "burst", lineBurst)
		}
		l.dropped++
		return 0, false
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return dropped, true
}
