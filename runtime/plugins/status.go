package plugins

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Status is one plugin's state, for `recordsctl plugins list` and readiness.
type Status struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	Version   string   `json:"version"`
	Resources []string `json:"resources"`
	// SHA256 is the hash of the program the running process was started from (hex).
	SHA256  string `json:"sha256,omitempty"`
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
	Starts  int    `json:"starts"`
	// Swaps counts the programs Watch swapped in (each a start too).
	Swaps     int    `json:"swaps"`
	LastError string `json:"last_error,omitempty"`
	// RefusedSHA256 is the program Watch last refused, and SwapError why, until a program is swapped in.
	RefusedSHA256 string `json:"refused_sha256,omitempty"`
	SwapError     string `json:"swap_error,omitempty"`
}

// Statuses reports every loaded plugin, by name.
func (h *Host) Statuses() []Status {
	var out []Status
	for _, e := range h.plugins {
		e.mu.Lock()
		s := Status{Name: e.name, Path: e.path, Version: e.desc.Version, Resources: e.desc.Resources, SHA256: e.served.sum,
			Running: e.proc != nil && !e.proc.client.Exited(), Starts: e.starts, Swaps: e.swaps, RefusedSHA256: e.refused}
		if s.Running {
			s.PID = pid(e.proc)
		}
		if e.lastErr != nil {
			s.LastError = e.lastErr.Error()
		}
		if e.swapErr != nil {
			s.SwapError = e.swapErr.Error()
		}
		e.mu.Unlock()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Health is one plugin's answer to Check: the version and program (SHA-256) of the process that
// answered, and Err when none did.
type Health struct {
	Version string
	SHA256  string
	Err     error
}

// Check reports, per plugin, whether its process answers a health ping within ctx, and which version
// and program answered; a plugin that exited is started again first, as the next hook call would.
func (h *Host) Check(ctx context.Context) map[string]Health {
	out := map[string]Health{}
	if h == nil {
		return out
	}
	for name, e := range h.plugins {
		out[name] = h.ping(ctx, e)
	}
	return out
}

func (h *Host) ping(ctx context.Context, e *entry) Health {
	c, p, err := h.ensure(ctx, e)
	if err != nil {
		return Health{Err: fmt.Errorf("not running: %w", err)}
	}
	e.mu.Lock()
	health := Health{Version: e.desc.Version, SHA256: e.served.sum}
	if e.proc == nil {
		p.calls.Done()
		e.mu.Unlock()
		return Health{Err: errors.New("not running: restarting")}
	}
	if e.proc != p {
		// Swapped out since ensure (a swap's process answered its own health check): report the
		// one that serves.
		p.calls.Done()
		e.mu.Unlock()
		return health
	}
	e.mu.Unlock()
	// The ping runs without the entry's lock: a plugin slow to answer must not hold up hook calls. It
	// holds the process as a call does, so a swap does not stop the process under it.
	done := make(chan error, 1)
	go func() {
		defer p.calls.Done()
		rpc, err := p.client.Client()
		if err == nil {
			err = rpc.Ping()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			e.mu.Lock()
			e.lastErr = err
			if e.hooks == c {
				e.broken = true
			}
			e.mu.Unlock()
			health.Err = fmt.Errorf("ping: %w", err)
		}
	case <-ctx.Done():
		health.Err = fmt.Errorf("ping: no answer: %w", ctx.Err())
	}
	return health
}
