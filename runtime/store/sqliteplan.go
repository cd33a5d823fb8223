package store

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"reflect"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite re-plans a prepared statement every time one of its parameters is bound again when the
// parameter's value could change the plan: with the samples ANALYZE keeps in sqlite_stat4, that is
// any parameter compared with the first column of an index — workspace_id in every statement the
// engine writes. Once a database has been analyzed, a cached statement would be parsed and planned
// anew on every run, as if it were not cached at all. keepPlans turns the use of those samples off
// on a connection (SQLITE_TESTCTRL_OPTIMIZATIONS with SQLITE_Stat4, "the optimization is off"): plans
// come from the sqlite_stat1 averages, as on a database never analyzed, and stay prepared.
//
// The driver does not expose its connection handle, so keepPlans reads it from the driver's
// connection by reflection; TestSQLiteStatementCache fails if a driver upgrade moves it.
func keepPlans(conn driver.Conn) error {
	db, tls, err := sqliteHandle(conn)
	if err != nil {
		return err
	}
	bp := libc.Xmalloc(tls, 16)
	if bp == 0 {
		return errors.New("sqlite: out of memory")
	}
	defer libc.Xfree(tls, bp)
	sqlite3.Xsqlite3_test_control(tls, sqlite3.SQLITE_TESTCTRL_OPTIMIZATIONS, libc.VaList(bp, db, uint32(sqlite3.SQLITE_Stat4)))
	if got := sqliteOptimizationsOff(db, tls); got != sqlite3.SQLITE_Stat4 {
		return errors.New("sqlite: the statistics samples could not be turned off")
	}
	return nil
}

// sqliteOptimizationsOff returns the optimizations turned off on a connection (SQLITE_TESTCTRL_GETOPT).
func sqliteOptimizationsOff(db uintptr, tls *libc.TLS) uint32 {
	bp := libc.Xmalloc(tls, 24)
	if bp == 0 {
		return 0
	}
	defer libc.Xfree(tls, bp)
	out := bp + 16
	libc.Xmemset(tls, out, -1, 4)
	sqlite3.Xsqlite3_test_control(tls, sqlite3.SQLITE_TESTCTRL_GETOPT, libc.VaList(bp, db, out))
	return binary.NativeEndian.Uint32(libc.GoBytes(out, 4))
}

// sqliteHandle returns the sqlite3* handle and the C thread state of a modernc.org/sqlite connection.
func sqliteHandle(conn driver.Conn) (uintptr, *libc.TLS, error) {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, nil, errors.New("sqlite: the driver's connection is not a struct")
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || tls.IsNil() {
		return 0, nil, errors.New("sqlite: the driver's connection has no handle where expected")
	}
	return uintptr(db.Uint()), (*libc.TLS)(tls.UnsafePointer()), nil
}
