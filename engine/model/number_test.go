package model_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/workspace-records/records/engine/model"
)

// TestNumberBounds: numbers whose exact conversion would cost math/big time in proportion to their
// exponent (1e-999999: about 20 ms each, a hundred to a filter) are refused with ErrNumberSize before
// any arithmetic (those beyond float64, such as 1e9999999, fail its parse earlier); ordinary numbers,
// exponents included, keep their canonical values.
func TestNumberBounds(t *testing.T) {
	dec := &model.Field{Key: "amount", Type: model.Decimal}
	integer := &model.Field{Key: "n", Type: model.Integer}
	const refused, beyondFloat = "refused", "beyond float64"
	for _, c := range []struct {
		f    *model.Field
		in   string
		want any
	}{
		{dec, "12.50", "12.5"}, {dec, "1.5e3", "1500"}, {dec, "-2E-2", "-0.02"}, {dec, "1e-100", "0"},
		{integer, "1e18", int64(1e18)}, {integer, "42", int64(42)},
		{dec, "1e-999999", refused}, {dec, "1e101", refused}, {dec, "1e-101", refused}, {integer, "1e-999999", refused},
		{dec, "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", refused},
		{dec, "1e9999999", beyondFloat}, {integer, "1e+999999", beyondFloat},
	} {
		got, err := model.Canonical(c.f, json.Number(c.in))
		switch c.want {
		case refused:
			if !errors.Is(err, model.ErrNumberSize) {
				t.Errorf("%s %s: got %v, %v; want ErrNumberSize", c.f.Type, c.in, got, err)
			}
		case beyondFloat:
			if err == nil {
				t.Errorf("%s %s: accepted as %v", c.f.Type, c.in, got)
			}
		default:
			if err != nil || got != c.want {
				t.Errorf("%s %s: got %#v, %v; want %#v", c.f.Type, c.in, got, err, c.want)
			}
		}
	}
}
