package records

import (
	"errors"
	"testing"

	"github.com/workspace-records/records/engine/model/modeltest"
	"github.com/workspace-records/records/engine/sqlgen"
)

// A row of another workspace never becomes a record, whatever query produced it.
func TestTenancyGuard(t *testing.T) {
	cat := modeltest.Shipped(t)
	r, _ := cat.Resource("tags")
	s := &Service{cat: cat}
	row := make([]any, len(sqlgen.SelectColumns(r))+1)
	row[0] = "0190a6d4-0000-7000-8000-00000000000b"
	for i, f := range sqlgen.SelectColumns(r) {
		switch f.Key {
		case "id":
			row[i+1] = "0190a6d4-0000-7000-8000-000000000001"
		case "created_at", "updated_at":
			row[i+1] = "2026-01-01T00:00:00.000000Z"
		case "archived":
			row[i+1] = int64(0)
		case "custom_fields":
			row[i+1] = "{}"
		}
	}
	if _, err := s.toRecord(r, row, "0190a6d4-0000-7000-8000-00000000000a", ""); !errors.Is(err, ErrTenancy) {
		t.Fatalf("row of workspace b read for workspace a: %v", err)
	}
	if _, err := s.toRecord(r, row, "0190a6d4-0000-7000-8000-00000000000b", ""); err != nil {
		t.Fatalf("row of the caller's workspace refused: %v", err)
	}
}
