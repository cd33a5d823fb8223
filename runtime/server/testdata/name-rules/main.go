// Command name-rules is a test plugin: it refuses a record whose name contains the word set at build
// time (-ldflags "-X main.forbidden=…"), so tests can swap one build for another; its After hook appends
// what it was told to the file set at build time too (-X main.afterFile=…), when set. (Not from the
// environment: a plugin gets the whole environment of the test process, which parallel tests share.)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/workspace-records/records/plugins/sdk"
)

var (
	forbidden = "forbidden"
	afterFile string
)

func main() {
	sdk.Serve("name-rules", "test-"+forbidden, sdk.Rules{Before: func(_ context.Context, c *sdk.Call) (*sdk.Result, error) {
		res := &sdk.Result{}
		if name, _ := c.Value("name").(string); strings.Contains(name, forbidden) {
			res.Refuse("name", "invalid", fmt.Sprintf("may not contain %q", forbidden))
		}
		return res, nil
	}, After: after})
}

func after(_ context.Context, c *sdk.Call, record map[string]any) error {
	path := afterFile
	if path == "" {
		return nil
	}
	line, err := json.Marshal(map[string]any{"operation": c.Operation, "resource": c.Resource, "member": c.Member, "changes": c.Changes, "record": record})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}
