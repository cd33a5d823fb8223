package servertest

import (
	"os"
	"testing"
)

// TestMain drops the template databases this package's own tests' servers were copied from (Main): a
// server of either backend starts building the other's template too.
func TestMain(m *testing.M) {
	os.Exit(Main(m))
}
