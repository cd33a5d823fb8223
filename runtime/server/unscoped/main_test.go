//go:build recordstest_unscoped

package unscoped_test

import (
	"os"
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
)

// TestMain drops the template databases the tests' servers were copied from (servertest.Main).
func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m))
}
