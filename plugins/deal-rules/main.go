// Command deal-rules is a Workspace Records plugin with the rules of deals:
//
//   - a deal moved to a won or lost stage needs a close date;
//   - a deal in a lost stage needs a loss reason (a record of loss_reasons);
//   - a deal's status follows its stage's type (open, won, lost);
//   - a deal's probability follows its stage's probability, unless the write sets it explicitly.
//
// These need the deal's stage, a lookup. The rules that need none — a deal whose status is won or lost has
// a close date, a lost one a loss reason — are declarative, in definitions/resources/deals.yaml (rules:).
//
// Name it in a definition with `hooks: [deal-rules]` and put the binary in recordsd's --plugins directory
// (`make plugins` builds it into plugins/bin).
package main

import (
	"context"
	"fmt"

	"github.com/workspace-records/records/plugins/sdk"
)

func main() {
	sdk.Serve("deal-rules", "1.0.0", sdk.Rules{Resources: []string{"deals"}, Before: before})
}

func before(ctx context.Context, c *sdk.Call) (*sdk.Result, error) {
	res := &sdk.Result{}
	if c.Operation != sdk.OpCreate && c.Operation != sdk.OpUpdate {
		return res, nil
	}
	stageID, _ := c.Value("stage_id").(string)
	if stageID == "" || !(c.Changed("stage_id") || c.Changed("close_date") || c.Changed("loss_reason_id") || c.Changed("status")) {
		return res, nil
	}
	stage, found, err := c.Lookup.Get(ctx, "pipeline_stages", stageID)
	if err != nil {
		return nil, fmt.Errorf("look up stage %s: %w", stageID, err)
	}
	if !found {
		return res, nil // the host refuses a reference to a missing record
	}
	kind, _ := stage["stage_type"].(string)
	if kind == "won" || kind == "lost" {
		if c.Value("close_date") == nil {
			res.Refuse("close_date", "required", fmt.Sprintf("a deal in a %s stage needs a close date", kind))
		}
	}
	if kind == "lost" && c.Value("loss_reason_id") == nil {
		res.Refuse("loss_reason_id", "required", "a lost deal needs a loss reason")
	}
	if kind != "" && c.Value("status") != kind {
		res.SetValue("status", kind)
	}
	if c.Changed("stage_id") && !c.Changed("probability") && stage["probability"] != nil {
		res.SetValue("probability", stage["probability"])
	}
	return res, nil
}
