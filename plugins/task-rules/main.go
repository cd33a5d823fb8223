// Command task-rules is a Workspace Records plugin with the rules of project tasks:
//
//   - a task's start and due dates may not fall before its project's start date;
//   - a task may not be moved to a closed status while one of its subtasks is still open;
//   - completed_at follows the status: set when the task enters a closed status, cleared when it leaves.
//
// Name it in project_tasks' definition with `hooks: [task-rules]`.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/workspace-records/records/plugins/sdk"
)

func main() {
	sdk.Serve("task-rules", "1.0.0", sdk.Rules{Resources: []string{"project_tasks"}, Before: before})
}

func before(ctx context.Context, c *sdk.Call) (*sdk.Result, error) {
	res := &sdk.Result{}
	if c.Operation != sdk.OpCreate && c.Operation != sdk.OpUpdate {
		return res, nil
	}
	if c.Changed("project_id") || c.Changed("start_date") || c.Changed("due_date") {
		if err := checkDates(ctx, c, res); err != nil {
			return nil, err
		}
	}
	if c.Changed("status_id") {
		if err := checkStatus(ctx, c, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func checkDates(ctx context.Context, c *sdk.Call, res *sdk.Result) error {
	projectID, _ := c.Value("project_id").(string)
	if projectID == "" {
		return nil
	}
	project, found, err := c.Lookup.Get(ctx, "projects", projectID)
	if err != nil || !found {
		return err
	}
	start, _ := project["start_date"].(string)
	if start == "" {
		return nil
	}
	for _, key := range []string{"start_date", "due_date"} {
		if d, _ := c.Value(key).(string); d != "" && d < start { // ISO dates compare as text
			res.Refuse(key, "out_of_range", fmt.Sprintf("may not be before the project's start date %s", start))
		}
	}
	return nil
}

func checkStatus(ctx context.Context, c *sdk.Call, res *sdk.Result) error {
	statusID, _ := c.Value("status_id").(string)
	closed := false
	if statusID != "" {
		status, found, err := c.Lookup.Get(ctx, "project_task_statuses", statusID)
		if err != nil {
			return err
		}
		closed = found && status["is_closed"] == true
	}
	if !closed {
		if c.Stored != nil && c.Stored["completed_at"] != nil && !c.Changed("completed_at") {
			res.SetValue("completed_at", nil)
		}
		return nil
	}
	if id, _ := c.Stored["id"].(string); id != "" {
		subtasks, _, err := c.Lookup.List(ctx, "project_tasks", []sdk.Filter{{Field: "parent_task_id", Op: "eq", Value: id}, {Field: "archived", Op: "eq", Value: false}}, 100)
		if err != nil {
			return err
		}
		for _, sub := range subtasks {
			sid, _ := sub["status_id"].(string)
			if sid == "" {
				res.Refuse("status_id", "invalid", fmt.Sprintf("subtask %q is still open", sub["title"]))
				return nil
			}
			st, found, err := c.Lookup.Get(ctx, "project_task_statuses", sid)
			if err != nil {
				return err
			}
			if !found || st["is_closed"] != true {
				res.Refuse("status_id", "invalid", fmt.Sprintf("subtask %q is still open", sub["title"]))
				return nil
			}
		}
	}
	if c.Value("completed_at") == nil {
		res.SetValue("completed_at", time.Now().UTC().Format(time.RFC3339))
	}
	return nil
}
