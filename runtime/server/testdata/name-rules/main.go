// Command name-rules is a test plugin: it refuses a record whose name contains the word set at build
// time (-ldflags "-X main.forbidden=…"), so tests can swap one build for another.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspace-records/records/plugins/sdk"
)

var forbidden = "forbidden"

func main() {
	sdk.Serve("name-rules", "test-"+forbidden, sdk.Rules{Before: func(_ context.Context, c *sdk.Call) (*sdk.Result, error) {
		res := &sdk.Result{}
		if name, _ := c.Value("name").(string); strings.Contains(name, forbidden) {
			res.Refuse("name", "invalid", fmt.Sprintf("may not contain %q", forbidden))
		}
		return res, nil
	}})
}
