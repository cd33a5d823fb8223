// Package crash holds the black-box crash test of recordsd's Idempotency-Key guarantees: one recordsd
// process over a fresh PostgreSQL database (and, for a few kill points, a SQLite file) serves idempotent
// creates, updates and archives from several clients while the test kills it with SIGKILL at random
// moments, mid-request included, and restarts it. Every request that got no definitive answer is retried
// with its Idempotency-Key until it gets one. At the end the database must hold every acknowledged write
// exactly once and every retried request's effect exactly once: one record per create, the last update's
// values, one audit row per operation, every key completed.
//
// The short form (20 kill points on PostgreSQL, 4 on SQLite) runs in `make test`; it ends a claim that a
// killed process abandoned directly in the database, which is what the passing of its lease does. `make
// crash-test` runs the long form (CRASH_LONG=1, or -crash.long): 200 kill points on PostgreSQL and 20 on
// SQLite, waiting for the real lease (idempotency.Lease) of every abandoned claim.
//
// PostgreSQL comes from RECORDS_TEST_POSTGRES as for the rest of the suite; without it the PostgreSQL
// half is skipped, except with CI=true, where it fails.
package crash
