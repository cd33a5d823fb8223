package server_test

import (
	"testing"

	"github.com/workspace-records/records/runtime/server/servertest"
	"github.com/workspace-records/records/runtime/server/servertest/tenancy"
)

// TestIsolationMatrix is the cross-tenant BOLA matrix (OWASP API1): a key of workspace B against every
// id workspace A has, on every route the router serves. See tenancy.IsolationMatrix.
func TestIsolationMatrix(t *testing.T) {
	t.Parallel()
	for _, b := range servertest.Backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			tenancy.IsolationMatrix(t, servertest.Start(t, b, servertest.Options{}))
		})
	}
}
