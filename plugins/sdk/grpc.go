package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/workspace-records/records/plugins/sdk/internal/hookspb"
)

// grpcPlugin is go-plugin's view of the hooks: impl on the plugin side, lookup on the host side.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl   *served
	lookup HostLookup
}

type served struct {
	name, version string
	rules         Rules
}

// GRPCServer registers the hooks in the plugin process.
func (p *grpcPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	hookspb.RegisterHooksServer(s, &hooksServer{s: p.impl, broker: broker, lookups: map[uint32]hookspb.LookupClient{}})
	return nil
}

// GRPCClient returns the host's client of a plugin, and starts the Lookup service the plugin calls back.
func (p *grpcPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	id := broker.NextId()
	go broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		hookspb.RegisterLookupServer(s, &lookupServer{l: p.lookup})
		return s
	})
	return &Client{c: hookspb.NewHooksClient(conn), broker: id}, nil
}

// HostLookup is what the host serves to plugins: reads on behalf of the write lookupID.
type HostLookup interface {
	Get(ctx context.Context, lookupID uint64, resource, id string) (map[string]any, bool, error)
	List(ctx context.Context, lookupID uint64, resource string, filters []Filter, limit int) ([]map[string]any, bool, error)
}

// HostPlugins is the plugin map a host gives go-plugin's client.
func HostPlugins(l HostLookup) map[string]plugin.Plugin {
	return map[string]plugin.Plugin{PluginName: &grpcPlugin{lookup: l}}
}

// Description is what a plugin says of itself.
type Description struct {
	Name      string
	Version   string
	Resources []string
}

// Client calls one plugin's hooks (host side).
type Client struct {
	c      hookspb.HooksClient
	broker uint32
}

// Describe asks the plugin for its name, version and resources.
//
// The call also names the broker id of the host's Lookup service (metadata lookupBrokerKey), so that
// the plugin connects to it now: go-plugin's broker only holds the host's connection offer for a few
// seconds, and a plugin that first dialled at its first Lookup, minutes later, would wait in vain.
func (c *Client) Describe(ctx context.Context) (Description, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, lookupBrokerKey, strconv.FormatUint(uint64(c.broker), 10))
	out, err := c.c.Describe(ctx, &hookspb.DescribeRequest{})
	if err != nil {
		return Description{}, err
	}
	return Description{Name: out.Name, Version: out.Version, Resources: out.Resources}, nil
}

// Before runs the plugin's Before hook for call; lookupID identifies the write for Lookup calls.
func (c *Client) Before(ctx context.Context, call *Call, lookupID uint64) (*Result, error) {
	pc, err := encodeCall(call)
	if err != nil {
		return nil, err
	}
	pc.LookupId, pc.LookupBrokerId = lookupID, c.broker
	out, err := c.c.Before(ctx, &hookspb.BeforeRequest{Call: pc})
	if err != nil {
		return nil, err
	}
	res := &Result{Conflict: out.Conflict}
	if len(out.SetJson) > 0 {
		if res.Set, err = decodeObject(out.SetJson); err != nil {
			return nil, fmt.Errorf("plugin set values: %w", err)
		}
	}
	for _, e := range out.Errors {
		res.Errors = append(res.Errors, FieldError{Field: e.Field, Code: e.Code, Message: e.Message})
	}
	return res, nil
}

// After runs the plugin's After hook.
func (c *Client) After(ctx context.Context, call *Call, record map[string]any) error {
	pc, err := encodeCall(call)
	if err != nil {
		return err
	}
	rec, err := json.Marshal(record)
	if err != nil {
		return err
	}
	_, err = c.c.After(ctx, &hookspb.AfterRequest{Call: pc, RecordJson: rec})
	return err
}

func encodeCall(c *Call) (*hookspb.Call, error) {
	out := &hookspb.Call{WorkspaceId: c.Workspace, MemberId: c.Member, Resource: c.Resource, Operation: string(c.Operation), RequestId: c.RequestID}
	var err error
	if c.Stored != nil {
		if out.StoredJson, err = json.Marshal(c.Stored); err != nil {
			return nil, err
		}
	}
	if out.ChangesJson, err = json.Marshal(c.Changes); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeCall(pc *hookspb.Call) (*Call, error) {
	c := &Call{Workspace: pc.WorkspaceId, Member: pc.MemberId, Resource: pc.Resource, Operation: Operation(pc.Operation), RequestID: pc.RequestId, Changes: map[string]any{}}
	var err error
	if len(pc.StoredJson) > 0 {
		if c.Stored, err = decodeObject(pc.StoredJson); err != nil {
			return nil, err
		}
	}
	if len(pc.ChangesJson) > 0 {
		if c.Changes, err = decodeObject(pc.ChangesJson); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func decodeObject(data []byte) (map[string]any, error) {
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// hooksServer runs in the plugin process.
type hooksServer struct {
	hookspb.UnimplementedHooksServer
	s       *served
	broker  *plugin.GRPCBroker
	mu      sync.Mutex
	lookups map[uint32]hookspb.LookupClient
}

// lookupBrokerKey is the gRPC metadata key of the Lookup service's broker id on Describe.
const lookupBrokerKey = "records-lookup-broker-id"

func (h *hooksServer) Describe(ctx context.Context, _ *hookspb.DescribeRequest) (*hookspb.DescribeResponse, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for _, v := range md.Get(lookupBrokerKey) {
			if id, err := strconv.ParseUint(v, 10, 32); err == nil {
				// Connect while the host's offer stands; a failure here is retried on first use.
				_, _ = h.lookupClient(uint32(id))
			}
		}
	}
	return &hookspb.DescribeResponse{Name: h.s.name, Version: h.s.version, Resources: h.s.rules.Resources}, nil
}

func (h *hooksServer) Before(ctx context.Context, req *hookspb.BeforeRequest) (*hookspb.BeforeResponse, error) {
	out := &hookspb.BeforeResponse{}
	if h.s.rules.Before == nil || req.Call == nil {
		return out, nil
	}
	call, err := decodeCall(req.Call)
	if err != nil {
		return nil, err
	}
	call.Lookup = &lookup{h: h, broker: req.Call.LookupBrokerId, id: req.Call.LookupId}
	res, err := h.s.rules.Before(ctx, call)
	if err != nil || res == nil {
		return out, err
	}
	if len(res.Set) > 0 {
		if out.SetJson, err = json.Marshal(res.Set); err != nil {
			return nil, err
		}
	}
	for _, e := range res.Errors {
		out.Errors = append(out.Errors, &hookspb.FieldError{Field: e.Field, Code: e.Code, Message: e.Message})
	}
	out.Conflict = res.Conflict
	return out, nil
}

func (h *hooksServer) After(ctx context.Context, req *hookspb.AfterRequest) (*hookspb.AfterResponse, error) {
	if h.s.rules.After == nil || req.Call == nil {
		return &hookspb.AfterResponse{}, nil
	}
	call, err := decodeCall(req.Call)
	if err != nil {
		return nil, err
	}
	rec, err := decodeObject(req.RecordJson)
	if err != nil {
		return nil, err
	}
	return &hookspb.AfterResponse{}, h.s.rules.After(ctx, call, rec)
}

func (h *hooksServer) lookupClient(id uint32) (hookspb.LookupClient, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.lookups[id]; ok {
		return c, nil
	}
	conn, err := h.broker.Dial(id)
	if err != nil {
		return nil, fmt.Errorf("dial host lookup: %w", err)
	}
	c := hookspb.NewLookupClient(conn)
	h.lookups[id] = c
	return c, nil
}

// lookup is the plugin side of Lookup. It connects to the host on first use, so that a rule that
// reads nothing never depends on the connection.
type lookup struct {
	h      *hooksServer
	broker uint32
	id     uint64
}

func (l *lookup) Get(ctx context.Context, resource, id string) (map[string]any, bool, error) {
	c, err := l.h.lookupClient(l.broker)
	if err != nil {
		return nil, false, err
	}
	out, err := c.Get(ctx, &hookspb.GetRequest{LookupId: l.id, Resource: resource, Id: id})
	if err != nil || !out.Found {
		return nil, false, err
	}
	rec, err := decodeObject(out.RecordJson)
	return rec, err == nil, err
}

func (l *lookup) List(ctx context.Context, resource string, filters []Filter, limit int) ([]map[string]any, bool, error) {
	fj, err := json.Marshal(filters)
	if err != nil {
		return nil, false, err
	}
	c, err := l.h.lookupClient(l.broker)
	if err != nil {
		return nil, false, err
	}
	out, err := c.List(ctx, &hookspb.ListRequest{LookupId: l.id, Resource: resource, FiltersJson: fj, Limit: uint32(max(0, limit))})
	if err != nil {
		return nil, false, err
	}
	recs := make([]map[string]any, 0, len(out.RecordsJson))
	for _, data := range out.RecordsJson {
		rec, err := decodeObject(data)
		if err != nil {
			return nil, false, err
		}
		recs = append(recs, rec)
	}
	return recs, out.HasMore, nil
}

// lookupServer runs in the host process.
type lookupServer struct {
	hookspb.UnimplementedLookupServer
	l HostLookup
}

func (s *lookupServer) Get(ctx context.Context, req *hookspb.GetRequest) (*hookspb.GetResponse, error) {
	rec, found, err := s.l.Get(ctx, req.LookupId, req.Resource, req.Id)
	if err != nil || !found {
		return &hookspb.GetResponse{}, err
	}
	data, err := json.Marshal(rec)
	return &hookspb.GetResponse{Found: true, RecordJson: data}, err
}

func (s *lookupServer) List(ctx context.Context, req *hookspb.ListRequest) (*hookspb.ListResponse, error) {
	var filters []Filter
	if len(req.FiltersJson) > 0 {
		dec := json.NewDecoder(bytes.NewReader(req.FiltersJson))
		dec.UseNumber()
		if err := dec.Decode(&filters); err != nil {
			return nil, fmt.Errorf("filters: %w", err)
		}
	}
	recs, more, err := s.l.List(ctx, req.LookupId, req.Resource, filters, int(req.Limit))
	if err != nil {
		return nil, err
	}
	out := &hookspb.ListResponse{HasMore: more}
	for _, rec := range recs {
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		out.RecordsJson = append(out.RecordsJson, data)
	}
	return out, nil
}
