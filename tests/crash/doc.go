// Package crash holds the black-box crash test of recordsd's Idempotency-Key guarantees: one recordsd
// process over a fresh PostgreSQL database (and, for a few kill points, a SQLite file) serves idempotent
// creates, updates and archives from several clients while the test kills it with SIGKILL at random
// moments, each once a request is in flight, and restarts it: at least one kill must cut a request (sent
// to the process killed, left without an answer), or the test fails. Every request that got no
// definitive answer is retried with its Idempotency-Key until it gets one. At the end the database must
// hold every acknowledged write exactly once and every retried request's effect exactly once: one
// record per create, the last update's values, one audit row per operation, every key completed.
//
// The change feed keeps the same count. With the last recordsd serving, every event the killed
// processes committed and left unnumbered is numbered within a few seconds (the sweep), and the whole
// feed read through GET /v1/events holds sequences 1..N without gap or duplicate: per record exactly
// one companies.created event and one companies.updated or companies.archived event per audit row
// (one per operation; none for a request that rolled back unacknowledged), no event of a record that
// does not exist, each event's data.id its record_id. Resumed after any sequence k, the feed holds
// exactly the events after k, in order.
//
// A claim a killed process abandoned blocks its key (409 idempotency_key_in_use) only until the server
// counts as dead (idempotency.DeadAfter after its last heartbeat), never for the claim's lease: every 409
// is checked against the kill of the process holding the claim (server_instances names its pid) and
// fails the test past a few seconds (inUseBound). Nothing is ended by hand in the database.
//
// The short form (20 kill points on PostgreSQL, 4 on SQLite) runs in `make test`. `make crash-test` runs
// the long form (CRASH_LONG=1, or -crash.long): 200 kill points on PostgreSQL and 20 on SQLite, where a
// chain behind an abandoned claim is parked while its worker goes on with others.
//
// PostgreSQL comes from RECORDS_TEST_POSTGRES as for the rest of the suite; without it the PostgreSQL
// half is skipped, except with CI=true, where it fails.
package crash
