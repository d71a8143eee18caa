package jsonw_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/jsonw"
	"github.com/metnos/gateway/internal/jsonw/jsonwtest"
)

func TestString_AsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := jsonwtest.RandomString(r)
		if got, want := string(jsonw.String(nil, s)), jsonwtest.EncodingJSON(t, s); got != want {
			t.Fatalf("String(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\x00", "<&>", "\u2028", "\xff\xfe", "a\xe2\x80b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsonw.String(nil, s)), jsonwtest.EncodingJSON(t, s); got != want {
			t.Fatalf("String(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

func TestFloat_AsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []float64{0, math.Copysign(0, -1), 1, 0.7, -0.35, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21, 123456789e15, 0.1 + 0.2, math.SmallestNonzeroFloat64, math.MaxFloat64}
	for range 5000 {
		cases = append(cases, r.Float64(), r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	for _, f := range cases {
		if got, want := string(jsonw.Float(nil, f)), jsonwtest.EncodingJSON(t, f); got != want {
			t.Fatalf("Float(%v) = %s, encoding/json %s", f, got, want)
		}
	}
}

func TestTime_AsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 3600), time.FixedZone("y", -5*3600-1800), time.Local}
	for range 5000 {
		tm := time.Unix(r.Int64N(4102444800), r.Int64N(1e9)).In(zones[r.IntN(len(zones))])
		if r.IntN(4) == 0 {
			tm = tm.Truncate(time.Second)
		}
		if got, want := string(jsonw.Time(nil, tm)), jsonwtest.EncodingJSON(t, tm); got != want {
			t.Fatalf("Time(%v) = %s, encoding/json %s", tm, got, want)
		}
	}
}

func TestStrings_AsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][]string{nil, {}, {""}, {"a", "b\n"}} {
		if got, want := string(jsonw.Strings(nil, s)), jsonwtest.EncodingJSON(t, s); got != want {
			t.Fatalf("Strings(%q) = %s, encoding/json %s", s, got, want)
		}
	}
	for range 1000 {
		s := make([]string, r.IntN(4))
		for i := range s {
			s[i] = jsonwtest.RandomString(r)
		}
		if got, want := string(jsonw.Strings(nil, s)), jsonwtest.EncodingJSON(t, s); got != want {
			t.Fatalf("Strings(%q) = %s, encoding/json %s", s, got, want)
		}
	}
}

// TestStringHTML_AsMarshal: the HTML variants are json.Marshal's strings.
func TestStringHTML_AsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		s := jsonwtest.RandomString(r)
		want, _ := json.Marshal(s)
		if got := jsonw.StringHTML(nil, s); string(got) != string(want) {
			t.Fatalf("StringHTML(%q) = %s, json.Marshal %s", s, got, want)
		}
		list := []string{s, jsonwtest.RandomString(r)}
		want, _ = json.Marshal(list)
		if got := jsonw.StringsHTML(nil, list); string(got) != string(want) {
			t.Fatalf("StringsHTML(%q) = %s, json.Marshal %s", list, got, want)
		}
	}
}

// BenchmarkString is what a decided-now answer's strings are like: words,
// paths and a reason, mostly ASCII with nothing to escape.
func BenchmarkString(b *testing.B) {
	s := `llm:local is allowed at autonomy Full (table: "summarise locally" by summariser)`
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = jsonw.String(buf[:0], s)
	}
}
