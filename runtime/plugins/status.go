package plugins

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/go-plugin"
)

// Status is one plugin's state, for `recordsctl plugins list` and readiness.
type Status struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	Version   string   `json:"version"`
	Resources []string `json:"resources"`
	Running   bool     `json:"running"`
	PID       int      `json:"pid,omitempty"`
	Starts    int      `json:"starts"`
	LastError string   `json:"last_error,omitempty"`
}

// Statuses reports every loaded plugin, by name.
func (h *Host) Statuses() []Status {
	var out []Status
	for _, e := range h.plugins {
		e.mu.Lock()
		s := Status{Name: e.name, Path: e.path, Version: e.desc.Version, Resources: e.desc.Resources, Running: e.proc != nil && !e.proc.client.Exited(), Starts: e.starts}
		if s.Running {
			if rc := e.proc.client.ReattachConfig(); rc != nil {
				s.PID = rc.Pid
			}
		}
		if e.lastErr != nil {
			s.LastError = e.lastErr.Error()
		}
		e.mu.Unlock()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Check reports, per plugin, whether its process answers a health ping within ctx; a plugin that
// exited is started again first, as the next hook call would.
func (h *Host) Check(ctx context.Context) map[string]error {
	out := map[string]error{}
	if h == nil {
		return out
	}
	for name, e := range h.plugins {
		out[name] = h.ping(ctx, e)
	}
	return out
}

func (h *Host) ping(ctx context.Context, e *entry) error {
	c, err := h.ensure(ctx, e)
	if err != nil {
		return fmt.Errorf("not running: %w", err)
	}
	e.mu.Lock()
	var client *plugin.Client
	if e.proc != nil && e.hooks == c {
		client = e.proc.client
	}
	e.mu.Unlock()
	if client == nil {
		return errors.New("not running: restarting")
	}
	// The ping runs without the entry's lock: a plugin slow to answer must not hold up hook calls.
	done := make(chan error, 1)
	go func() {
		rpc, err := client.Client()
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
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ping: no answer: %w", ctx.Err())
	}
}
