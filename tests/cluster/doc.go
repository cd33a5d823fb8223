// Package cluster holds the black-box test of several recordsd replicas behind one address space: three
// recordsd processes on loopback ports share one PostgreSQL database and one Redis, and the test shows
// that rate limits, the monthly quota, idempotency keys and cursors are global, that revocations, custom
// fields, data models and role changes reach every replica within 2 s, and that a replica killed with
// SIGKILL in the middle of a stream of idempotent writes loses nothing acknowledged and duplicates nothing
// retried. docs/deployment.md describes the deployment it models.
//
// The short form runs in `make test` (about half a minute). `make cluster-test` runs the long form
// (CLUSTER_LONG=1, or -cluster.long): larger limits, repeated propagation rounds and several kill points
// (SIGKILL and SIGTERM). A claim a killed replica abandoned is taken over once the replica counts as dead
// (idempotency.DeadAfter), never by hand in the database.
//
// PostgreSQL comes from RECORDS_TEST_POSTGRES and Redis from RECORDS_TEST_REDIS, as for the rest of the
// suite; without them the test is skipped, except with CI=true, where it fails.
package cluster
