// Package cluster holds the black-box test of several recordsd replicas behind one address space: three
// recordsd processes on loopback ports share one PostgreSQL database and one Redis, and the test shows
// that rate limits, the monthly quota, idempotency keys and cursors are global, that revocations, custom
// fields, data models and role changes reach every replica within 2 s, and that a replica killed with
// SIGKILL in the middle of a stream of idempotent writes loses nothing acknowledged and duplicates nothing
// retried. docs/deployment.md describes the deployment it models.
//
// TestWebhooksSurviveKills (issue 22) runs two replicas over their own database with a webhook endpoint
// pointing at tools/webhookrecv, built and run as its own program (webhook_allow_private_addresses lets
// the endpoint name loopback; webhook_lease is 3 s, so a killed replica's delivery goes to the other
// within seconds rather than the default minute). Four clients send creates and updates with
// Idempotency-Keys through both replicas while the test SIGKILLs a replica at 12 random moments and
// restarts it. Half of the kill points wait for a delivery in flight (a replica holding the endpoint's
// lease with deliveries pending: the lease names the replica's server_instances row, hence its pid) and
// kill that replica or, every other time, the other one; at least one kill must land on a replica
// delivering. A replica that does not start again fails the test. A write left unanswered is retried
// with its key or, at random, given up. Once every event is numbered and delivered (within 60 s), the
// feed read through GET /v1/events holds exactly one event per acknowledged or committed write (the
// database says which given-up writes committed) and none for a rolled-back one, and every event
// reached the receiver at least once with a verified signature, first receipts in sequence order.
// Duplicate deliveries (a replica killed between the receiver's answer and its log) are allowed and
// reported, with the delivery lag.
//
// The short form runs in `make test` (about half a minute). `make cluster-test` runs the long form
// (CLUSTER_LONG=1, or -cluster.long): larger limits, repeated propagation rounds and several kill points
// (SIGKILL and SIGTERM), and 100 kill points in TestWebhooksSurviveKills. A claim a killed replica abandoned is taken over once the replica counts as dead
// (idempotency.DeadAfter), never by hand in the database.
//
// PostgreSQL comes from RECORDS_TEST_POSTGRES and Redis from RECORDS_TEST_REDIS, as for the rest of the
// suite; without them the test is skipped, except with CI=true, where it fails.
package cluster
