// Package tenancy holds the workspace isolation suites that two test packages run on a real server
// (servertest): runtime/server, with the engine's workspace predicate, and runtime/server/unscoped,
// built with -tags recordstest_unscoped, where row-level security alone keeps workspaces apart. Each
// package compiles only its own tests and this package: the tagged run no longer compiles and links all
// of runtime/server's.
//
//   - IsolationMatrix: the cross-tenant BOLA matrix, a key of workspace B against every id of A on
//     every route (TestIsolationMatrix, TestUnscopedRowSecurity/matrix);
//   - PoolLeak: two workspaces' requests interleaved over one server's pool (TestPoolWorkspaceLeak,
//     TestUnscopedRowSecurity/pool_leak), StartSmallPool a server over a pool of two connections;
//   - Superuser: a connection that bypasses row-level security, to take it off a table or look behind it.
package tenancy
