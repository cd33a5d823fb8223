package model_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strings"
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

// Canonical's plain-number paths (no math/big for integers of at most 18 digits and decimals of at
// most 30 integer and 20 fraction digits) give exactly what math/big gives, over signs, leading and
// trailing zeros and every length at and around the limits.
func TestPlainNumbers(t *testing.T) {
	integer := &model.Field{Key: "n", Type: model.Integer}
	dec := &model.Field{Key: "amount", Type: model.Decimal}
	viaRat := func(f *model.Field, text string) (any, error) {
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return nil, errors.New("not a number")
		}
		if f.Type == model.Integer {
			if !r.IsInt() || !r.Num().IsInt64() {
				return nil, errors.New("must be an integer")
			}
			return r.Num().Int64(), nil
		}
		s := r.FloatString(20)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
		if !regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,20})?$`).MatchString(s) {
			return nil, errors.New("too many digits")
		}
		return s, nil
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789"[rnd.IntN(10)]
			if rnd.IntN(4) == 0 {
				b[i] = '0' // runs of zeros: leading, trailing, all
			}
		}
		return string(b)
	}
	cases := []string{"0", "-0", "00", "-00.000", "0.0", "1.", ".5", "-", "", "1e3", "+5", "9223372036854775807", "-9223372036854775808", "999999999999999999", "1000000000000000000"}
	for range 20000 {
		s := digits(1 + rnd.IntN(33))
		if rnd.IntN(2) == 0 {
			s += "." + digits(rnd.IntN(23))
		}
		if rnd.IntN(3) == 0 {
			s = "-" + s
		}
		cases = append(cases, s)
	}
	for _, text := range cases {
		for _, f := range []*model.Field{integer, dec} {
			got, gotErr := model.Canonical(f, json.Number(text))
			want, wantErr := viaRat(f, text)
			if _, err := json.Number(text).Float64(); err != nil || !model.SaneNumber(text) {
				continue // refused before either path
			}
			if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && got != want) {
				t.Fatalf("%s %q: got %#v, %v; math/big gives %#v, %v", f.Type, text, got, gotErr, want, wantErr)
			}
		}
	}
}
