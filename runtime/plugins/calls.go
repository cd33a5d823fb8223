package plugins

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/workspace-records/records/plugins/sdk"
	"github.com/workspace-records/records/runtime/metrics"
)

// Handles reports whether plugin name has rules for resource.
func (h *Host) Handles(name, resource string) bool {
	e, ok := h.plugins[name]
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.desc.Resources) == 0 {
		return true
	}
	for _, r := range e.desc.Resources {
		if r == resource {
			return true
		}
	}
	return false
}

// Before runs plugin name's Before hook for call, with the call deadline; reader serves its lookups.
func (h *Host) Before(ctx context.Context, name string, call *sdk.Call, reader Reader) (res *sdk.Result, err error) {
	start := time.Now()
	defer func() {
		outcome := metrics.OutcomeOK
		if err != nil {
			outcome = metrics.OutcomeUnavailable
		}
		h.cfg.Metrics.PluginCall(name, string(sdk.HookBefore), outcome, time.Since(start))
	}()
	// The deadline covers the whole call, a (re)start of the program included.
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	c, held, e, err := h.client(cctx, name)
	if err != nil {
		return nil, err
	}
	// The call holds its process until it returns: a swap (Watch) lets it finish there.
	defer func() {
		if held != nil {
			held.calls.Done()
		}
	}()
	id := h.nextID.Add(1)
	h.lookups.Store(id, reader)
	defer h.lookups.Delete(id)
	res, err = c.Before(cctx, call, id)
	if err != nil && h.failed(ctx, cctx, e, c, err) && cctx.Err() == nil {
		// The process died or was replaced under the call: start it again if need be and ask once
		// more, within the same deadline.
		held.calls.Done()
		if c, held, _, err = h.client(cctx, name); err == nil {
			res, err = c.Before(cctx, call, id)
			if err != nil {
				h.failed(ctx, cctx, e, c, err)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s before %s %s: %v", ErrUnavailable, name, call.Operation, call.Resource, err)
	}
	return res, nil
}

// failed records err, the failure of a call through c whose deadline is cctx (under the caller's ctx),
// and reports whether the plugin's connection or process is gone (or was replaced meanwhile) rather than
// that the hook failed. A connection gone, or a call that missed the deadline the host gave it (the
// plugin is presumed stuck: a hook that ignores its context would pile up in the process), marks the
// plugin for a restart before the next call, unless c was replaced already.
func (h *Host) failed(ctx, cctx context.Context, e *entry, c *sdk.Client, err error) bool {
	code := status.Code(err)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
	if e.hooks != c {
		return true
	}
	lost := code == codes.Unavailable || (code == codes.Canceled && cctx.Err() == nil) || e.proc.client.Exited()
	if lost || (cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil) {
		e.broken = true
	}
	return lost
}

// After runs plugin name's After hook in the background, with the call deadline; a failure is logged.
// With Config.AfterLimit hooks already running, it is skipped instead (logged and counted): the write
// stands, as when an After hook fails, and a burst of writes to a slow plugin cannot pile up goroutines
// and connections without bound.
func (h *Host) After(name string, call *sdk.Call, record map[string]any) {
	if h.afterSlots != nil {
		select {
		case h.afterSlots <- struct{}{}:
		default:
			h.cfg.Metrics.PluginCall(name, string(sdk.HookAfter), metrics.OutcomeSkipped, 0)
			h.cfg.Log.Warn("after hook skipped: as many as plugin_after_limit are running; the write stands", "plugin", name,
				"limit", cap(h.afterSlots), "resource", call.Resource, "operation", call.Operation, "request_id", call.RequestID)
			return
		}
	}
	h.after.Add(1)
	go func() {
		defer h.after.Done()
		if h.afterSlots != nil {
			defer func() { <-h.afterSlots }()
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
		defer cancel()
		start := time.Now()
		outcome := metrics.OutcomeOK
		c, p, e, err := h.client(ctx, name)
		if err != nil {
			outcome = metrics.OutcomeUnavailable
		} else {
			err = c.After(ctx, call, record)
			p.calls.Done()
			if err != nil {
				outcome = metrics.OutcomeError
				if h.failed(context.Background(), ctx, e, c, err) || ctx.Err() != nil {
					outcome = metrics.OutcomeUnavailable
				}
			}
		}
		h.cfg.Metrics.PluginCall(name, string(sdk.HookAfter), outcome, time.Since(start))
		if err != nil {
			h.cfg.Log.Warn("after hook failed; the write stands", "plugin", name, "resource", call.Resource, "operation", call.Operation, "request_id", call.RequestID, "err", err)
		}
	}()
}

// lookupServer serves plugins' Lookup calls from the Reader registered for the write.
type lookupServer struct{ h *Host }

func (l lookupServer) reader(id uint64) (Reader, error) {
	r, ok := l.h.lookups.Load(id)
	if !ok {
		return nil, fmt.Errorf("lookup %d is not part of a running hook", id)
	}
	return r.(Reader), nil
}

func (l lookupServer) Get(ctx context.Context, id uint64, resource, recordID string) (map[string]any, bool, error) {
	r, err := l.reader(id)
	if err != nil {
		return nil, false, err
	}
	return r.Get(ctx, resource, recordID)
}

func (l lookupServer) List(ctx context.Context, id uint64, resource string, filters []sdk.Filter, limit int) ([]map[string]any, bool, error) {
	r, err := l.reader(id)
	if err != nil {
		return nil, false, err
	}
	return r.List(ctx, resource, filters, limit)
}
