// Package sqlgen builds SQL for resources as (text, args) pairs for PostgreSQL or SQLite. Identifiers
// come only from the model and are quoted; caller values only ever travel as placeholders. Every
// statement filters on workspace_id first. The builder never executes anything.
package sqlgen

import (
	"strconv"
	"strings"
	"time"
)

// Stmt is one SQL statement with its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Kind names a SQL dialect.
type Kind uint8

// The supported dialects.
const (
	Postgres Kind = iota + 1
	SQLite
)

// Dialect builds SQL for one database kind. Choose it once, at start.
type Dialect struct{ kind Kind }

// New returns the dialect of kind.
func New(kind Kind) Dialect { return Dialect{kind: kind} }

// Kind returns the dialect's kind.
func (d Dialect) Kind() Kind { return d.kind }

func (d Dialect) String() string {
	if d.kind == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Quote quotes an identifier: NUL bytes are dropped and double quotes doubled (as pgx's Identifier.Sanitize).
func Quote(ident string) string {
	ident = strings.ReplaceAll(ident, "\x00", "")
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// NullsLargest reports whether NULL sorts after every value in ascending order (PostgreSQL) rather than
// before it (SQLite). Keyset pagination follows each database's native order so that indexes serve it.
func (d Dialect) NullsLargest() bool { return d.kind == Postgres }

// args accumulates placeholder arguments.
type args struct {
	d    Dialect
	vals []any
}

func (a *args) add(v any) string {
	a.vals = append(a.vals, a.d.Arg(v))
	if a.d.kind == Postgres {
		return "$" + strconv.Itoa(len(a.vals))
	}
	return "?"
}

// SQLiteTime is how SQLite stores datetimes: fixed-width UTC text, so text order is time order.
const SQLiteTime = "2006-01-02T15:04:05.000000Z"

// Arg converts a canonical value to what the driver of d takes.
func (d Dialect) Arg(v any) any {
	if d.kind == SQLite {
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Format(SQLiteTime)
		case bool:
			if x {
				return int64(1)
			}
			return int64(0)
		}
	}
	return v
}

// Bind returns a statement from constant SQL written with ? placeholders, numbering them for PostgreSQL.
// It is for fixed system queries only; resource SQL is built by the other functions of this package.
func (d Dialect) Bind(sql string, args ...any) Stmt {
	conv := make([]any, len(args))
	for i, v := range args {
		conv[i] = d.Arg(v)
	}
	if d.kind != Postgres {
		return Stmt{SQL: sql, Args: conv}
	}
	var b strings.Builder
	n := 0
	for _, c := range sql {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return Stmt{SQL: b.String(), Args: conv}
}
