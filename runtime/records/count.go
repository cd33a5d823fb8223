package records

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/workspace-records/records/engine/listplan"
	"github.com/workspace-records/records/engine/sqlgen"
	"github.com/workspace-records/records/runtime/store"
)

// count sets page's total count when the plan asks for one. Exact counts run the list's own predicate
// (tenancy, record rule, archived, search, filters).
//
// count=estimated never answers from another workspace's rows. PostgreSQL's planner statistics (most
// common values, histograms, the share of archived rows) describe a whole table, every workspace's rows
// together, and row-level security does not keep the planner from using them: an estimate of a filter
// would tell whether another workspace stores a value, and roughly how often. So the planner is asked
// only for the workspace's own row count, when the list has no condition beyond its tenancy
// (listplan.Plan.TenancyOnly) and the planner knows the workspace as one of the table's most common
// workspace ids: its figure is then the workspace's own share of the sampled rows times the table's rows.
// Everywhere else (a filter, a filter path, a search, a record rule, a data model, a workspace the
// statistics do not name, SQLite) the estimate is an exact count stopped at listplan.EstimateExactCap,
// said estimated when it reaches the cap.
func (s *Service) count(ctx context.Context, c *Collection, plan *listplan.Plan, page *Page) error {
	if plan.Count == "" || plan.Count == listplan.CountNone {
		return nil
	}
	ctx = store.WithWorkspace(ctx, c.Workspace)
	limit := 0
	if plan.Count == listplan.CountEstimated {
		if s.d.Kind() == sqlgen.Postgres && plan.TenancyOnly() {
			n, known, err := s.estimate(ctx, plan.Resource.Table, c.Workspace)
			if err != nil {
				return err
			}
			if known {
				page.TotalCount, page.TotalEstimated = &n, true
				return nil
			}
		}
		limit = listplan.EstimateExactCap
	}
	var n int64
	if _, err := store.QueryOne(ctx, s.st, s.d.Count(plan, c.Workspace, limit), func(row []any) error {
		n = store.Int(row[0])
		return nil
	}); err != nil {
		return fmt.Errorf("count %s: %w", plan.Resource.Name, err)
	}
	page.TotalCount, page.TotalEstimated = &n, limit > 0 && n >= int64(limit)
	return nil
}

// estimate reads the planner's figure for workspace's rows of table, and whether the planner knows the
// workspace: a figure equal to the one it gives a workspace id it has never seen is the average of the
// workspaces its statistics do not list (the rest of the table spread over them), a figure of other
// workspaces' rows, and is not used. Both figures are kept for plannerFigureAge (figures).
func (s *Service) estimate(ctx context.Context, table, workspace string) (int64, bool, error) {
	now := time.Now()
	n, err := s.figures.get(table, workspace, now, func() (int64, error) {
		return s.plannerRows(ctx, table, workspace)
	})
	if err != nil {
		return 0, false, err
	}
	stranger, err := s.figures.get(table, unseenWorkspace, now, func() (int64, error) {
		return s.plannerRows(store.WithWorkspace(ctx, unseenWorkspace), table, unseenWorkspace)
	})
	if err != nil {
		return 0, false, err
	}
	return n, n != stranger, nil
}

// unseenWorkspace is a workspace id no workspace holds (workspace ids are UUIDv7).
const unseenWorkspace = "00000000-0000-0000-0000-000000000000"

// plannerRows is the planner's row figure for workspace's rows of table.
func (s *Service) plannerRows(ctx context.Context, table, workspace string) (int64, error) {
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if _, err := store.QueryOne(ctx, s.st, s.d.Estimate(table, workspace), func(row []any) error {
		return json.Unmarshal(store.JSON(row[0]), &out)
	}); err != nil {
		return 0, fmt.Errorf("estimate %s: %w", table, err)
	}
	if len(out) == 0 {
		return 0, fmt.Errorf("estimate %s: no plan", table)
	}
	return int64(math.Round(out[0].Plan.Rows)), nil
}

// plannerFigureAge is how long a planner's figure is reused: statistics change when a table is analysed
// (autovacuum), not from one request to the next, and an estimate is an estimate.
const plannerFigureAge = 5 * time.Second

// plannerFigureMax bounds the figures kept (a figure per table and workspace asked).
const plannerFigureMax = 8192

// plannerFigures caches the planner's figures by table and workspace (a workspace's own figure is only
// ever answered to that workspace).
type plannerFigures struct {
	mu sync.Mutex
	m  map[figureKey]plannerFigure
}

type figureKey struct{ table, workspace string }

type plannerFigure struct {
	rows int64
	at   time.Time
}

// get returns the figure of workspace in table, reading it with read when it is missing or older than
// plannerFigureAge.
func (c *plannerFigures) get(table, workspace string, now time.Time, read func() (int64, error)) (int64, error) {
	k := figureKey{table, workspace}
	c.mu.Lock()
	f, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Sub(f.at) < plannerFigureAge {
		return f.rows, nil
	}
	n, err := read()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= plannerFigureMax {
		fresh := make(map[figureKey]plannerFigure, len(c.m)/2+1)
		for k, f := range c.m {
			if now.Sub(f.at) < plannerFigureAge {
				fresh[k] = f
			}
		}
		if len(fresh) >= plannerFigureMax {
			fresh = map[figureKey]plannerFigure{}
		}
		c.m = fresh
	}
	c.m[k] = plannerFigure{rows: n, at: now}
	return n, nil
}
