// Command signal-rules is a Workspace Records plugin with the rules of project signals (risks and
// issues):
//
//   - risk_score is the severity's level times the probability's likelihood (%), kept on every write
//     that changes either (null when one is missing);
//   - a signal scoring 200 or more needs a mitigation plan and an owner.
//
// Name it in project_signals' definition with `hooks: [signal-rules]`.
package main

import (
	"context"
	"encoding/json"

	"github.com/workspace-records/records/plugins/sdk"
)

// attention is the risk score from which a signal needs a mitigation plan and an owner.
const attention = 200

func main() {
	sdk.Serve("signal-rules", "1.0.0", sdk.Rules{Resources: []string{"project_signals"}, Before: before})
}

func before(ctx context.Context, c *sdk.Call) (*sdk.Result, error) {
	res := &sdk.Result{}
	if c.Operation != sdk.OpCreate && c.Operation != sdk.OpUpdate {
		return res, nil
	}
	score := c.Value("risk_score")
	if c.Changed("severity_id") || c.Changed("probability_id") || c.Operation == sdk.OpCreate {
		level, err := number(ctx, c, "signal_severities", "severity_id", "level")
		if err != nil {
			return nil, err
		}
		likelihood, err := number(ctx, c, "signal_probabilities", "probability_id", "likelihood_percent")
		if err != nil {
			return nil, err
		}
		score = nil
		if level != nil && likelihood != nil {
			score = min(max(*level**likelihood, 0), 1000)
		}
		res.SetValue("risk_score", score)
	}
	if s, ok := toInt(score); ok && s >= attention {
		if plan, _ := c.Value("mitigation_plan").(string); plan == "" {
			res.Refuse("mitigation_plan", "required", "a signal with a risk score of 200 or more needs a mitigation plan")
		}
		if c.Value("owner_member_id") == nil {
			res.Refuse("owner_member_id", "required", "a signal with a risk score of 200 or more needs an owner")
		}
	}
	return res, nil
}

// number reads the integer field of the record that c's reference key points to.
func number(ctx context.Context, c *sdk.Call, resource, key, field string) (*int64, error) {
	id, _ := c.Value(key).(string)
	if id == "" {
		return nil, nil
	}
	rec, found, err := c.Lookup.Get(ctx, resource, id)
	if err != nil || !found {
		return nil, err
	}
	n, ok := toInt(rec[field])
	if !ok {
		return nil, nil
	}
	return &n, nil
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	}
	return 0, false
}
