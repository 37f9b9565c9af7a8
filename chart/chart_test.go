package chart

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func iv(lo, hi float64) *dpsql.Interval { return &dpsql.Interval{Lo: lo, Hi: hi} }

// results are the shapes FromResult tells apart.
var results = map[string]*dpsql.Result{
	"grouped": {Columns: []string{"Education", "people", "mean_age"}, Rows: [][]any{
		{"HS-grad", int64(10490), 38.8}, {"Doctorate", int64(390), 40.0}, {"Preschool", int64(3), 41.0}},
		Intervals: [][]*dpsql.Interval{{nil, iv(10400, 10580), iv(38.2, 39.5)}, {nil, iv(300, 480), iv(26, 54)},
			{nil, iv(-87, 93), {Lo: 0, Hi: 125, Wide: true}}}},
	"one_row": {Columns: []string{"n", "mean"}, Rows: [][]any{{int64(20000), 39.5}},
		Intervals: [][]*dpsql.Interval{{iv(19990, 20010), iv(39.4, 39.6)}}},
	"numeric_key": {Columns: []string{"age", "n"}, Rows: [][]any{{int64(40), int64(7)}, {int64(20), int64(5)}, {int64(30), nil}},
		Intervals: [][]*dpsql.Interval{{nil, iv(5, 9)}, {nil, iv(3, 7)}, {nil, nil}}},
	"text_only": {Columns: []string{"table", "privacy"}, Rows: [][]any{{"adult", "private"}}},
	"message":   {Message: "budget set"},
	"nan": {Columns: []string{"k", "v"}, Rows: [][]any{{"a", math.NaN()}, {"b", 2.0}},
		Intervals: [][]*dpsql.Interval{{nil, nil}, {nil, iv(1, 3)}}},
	// Numbers without intervals are not released noisy values: no chart.
	"show_budget": {Columns: []string{"budget", "epsilon", "delta"}, Rows: [][]any{{"total", 1.0, 1e-6}, {"spent", 0.5, 0.0}}},
	"public":      {Columns: []string{"code", "rate"}, Rows: [][]any{{"a", 0.25}, {"b", 0.5}, {"c", 0.75}}},
	"key_only": {Columns: []string{"age"}, Rows: [][]any{{int64(20)}, {int64(30)}, {int64(40)}},
		Intervals: [][]*dpsql.Interval{{nil}, {nil}, {nil}}},
	// The key needs not come first.
	"key_last": {Columns: []string{"n", "age"}, Rows: [][]any{{int64(7), int64(40)}, {int64(5), int64(20)}, {int64(6), int64(30)}},
		Intervals: [][]*dpsql.Interval{{iv(5, 9), nil}, {iv(3, 7), nil}, {iv(4, 8), nil}}},
	"two_keys": {Columns: []string{"region", "n", "diagnosis"}, Rows: [][]any{{"North", int64(5), "flu"}, {"North", int64(7), "none"}, {int64(3), int64(1), nil}},
		Intervals: [][]*dpsql.Interval{{nil, iv(3, 7), nil}, {nil, iv(5, 9), nil}, {nil, iv(0, 3), nil}}},
}

// TestFromResult checks the spec chosen for each shape against its
// golden file (go test ./chart -update rewrites them).
func TestFromResult(t *testing.T) {
	for name, r := range results {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := FromResult(r)
			got, err := json.MarshalIndent(jsonSpec(spec), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("spec differs from %s:\n%s", path, got)
			}
		})
	}
}

// jsonSpec is a spec with NaN as null, for the golden files.
func jsonSpec(s Spec) any {
	num := func(xs []float64) []*float64 {
		out := make([]*float64, len(xs))
		for i, x := range xs {
			if !math.IsNaN(x) {
				out[i] = &xs[i]
			}
		}
		return out
	}
	type series struct {
		Name          string
		Value, Lo, Hi []*float64
		FewRows       []bool
		Text          []string
	}
	var ss []series
	for _, se := range s.Series {
		ss = append(ss, series{se.Name, num(se.Value), num(se.Lo), num(se.Hi), se.FewRows, se.Text})
	}
	return struct {
		Kind     Kind
		Key      string
		Labels   []string
		Keys     []float64
		Series   []series
		Caption  string
		Whiskers int
	}{s.Kind, s.Key, s.Labels, s.Keys, ss, s.Caption, s.Whiskers()}
}

// TestRender draws each chart in both formats: the PNG decodes at the
// asked width, the SVG draws every label and value text (escaped), and
// one whisker per interval (three strokes each: the line and its caps).
func TestRender(t *testing.T) {
	r := results["grouped"]
	r.Rows[0][0] = "<HS & grad>"
	defer func() { r.Rows[0][0] = "HS-grad" }()
	spec := FromResult(r)
	b, err := Render(spec, PNG, 500)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w != 500 {
		t.Errorf("PNG is %d pixels wide, want 500", w)
	}
	svg, err := Render(spec, SVG, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{"&lt;HS &amp; grad&gt;", "10490 ± 90", "40 [0, 130] (few rows)", "people", "mean_age"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(s, "<HS") {
		t.Error("a label reached the SVG unescaped")
	}
	// The few-rows row has no whisker: 5 of the 6 values.
	if got := spec.Whiskers(); got != 5 {
		t.Errorf("Whiskers() = %d, want 5", got)
	}
	line, err := Render(FromResult(results["numeric_key"]), SVG, 0)
	if err != nil || !strings.Contains(string(line), "n by age") {
		t.Errorf("line chart: %v", err)
	}
	if _, err := Render(FromResult(results["text_only"]), SVG, 0); err == nil {
		t.Error("a result without numbers was drawn")
	}
	if _, err := Render(spec, "gif", 0); err == nil {
		t.Error("an unknown format was accepted")
	}
}
