package listplan_test

import (
	"net/url"
	"testing"

	"github.com/workspace-records/records/engine/field"
	"github.com/workspace-records/records/engine/listplan"
)

// The filter parameter is read as strictly as a body: a filter item naming a member twice is refused
// with a duplicate error on filter, never read as its last value (which would let a filter check the
// first name while SQL used the second).
func TestFilterParamDuplicateMember(t *testing.T) {
	for _, filter := range []string{
		`[{"field":"name","op":"eq","value":"a","field":"amount"}]`,
		`[{"field":"name","op":"eq","op":"ne","value":"a"}]`,
		`[{"field":"name","op":"in","value":["a"],"value":["b"]}]`,
		`[{"field":"n\u0061me","op":"eq","value":"a","name":1,"name":2}]`,
	} {
		_, errs := listplan.FromQuery(url.Values{"filter": {filter}})
		if len(errs) != 1 || errs[0].Code != field.CodeDuplicate || errs[0].Field != "filter" {
			t.Errorf("%s: %v", filter, errs)
		}
	}
	// Case variants are distinct members: the unknown one is refused when the item is resolved.
	if _, errs := listplan.FromQuery(url.Values{"filter": {`[{"field":"name","Field":"amount","op":"eq","value":"a"}]`}}); len(errs) != 0 {
		t.Errorf("case variant refused while decoding: %v", errs)
	}
}
