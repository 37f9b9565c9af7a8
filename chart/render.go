package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-analyze/charts"
)

// Formats Render writes.
const (
	SVG = "svg"
	PNG = "png"
)

// Layout, in pixels at the painter's scale.
const (
	defaultWidth = 760
	pad          = 16
	titleHeight  = 26
	rowHeight    = 24
	barHeight    = 14
	axisHeight   = 26
	panelGap     = 18
	lineHeight   = 220 // a Line panel's plot area
	fontSize     = 11.0
)

var (
	barColor     = charts.Color{R: 84, G: 112, B: 198, A: 255}
	fewRowsColor = charts.Color{R: 200, G: 200, B: 200, A: 255}
	whiskerColor = charts.Color{R: 30, G: 30, B: 30, A: 255}
	bandColor    = charts.Color{R: 84, G: 112, B: 198, A: 70}
	axisColor    = charts.Color{R: 110, G: 110, B: 110, A: 255}
	gridColor    = charts.Color{R: 225, G: 225, B: 225, A: 255}
	textColor    = charts.Color{R: 40, G: 40, B: 40, A: 255}
	background   = charts.Color{R: 255, G: 255, B: 255, A: 255}
)

// Render draws s as an image in format (SVG or PNG), width pixels wide
// (0: 760); the height follows from the rows and series.
func Render(s Spec, format string, width int) ([]byte, error) {
	if format != SVG && format != PNG {
		return nil, fmt.Errorf("chart: unknown image format %q (svg or png)", format)
	}
	if s.Kind == None || len(s.Series) == 0 {
		return nil, fmt.Errorf("chart: the result has no numeric column to draw (a table shows it)")
	}
	if width <= 0 {
		width = defaultWidth
	}
	width = max(width, 320)
	height := pad + 20 // the caption
	for range s.Series {
		height += panelHeight(s) + panelGap
	}
	p := charts.NewPainter(charts.PainterOptions{OutputFormat: format, Width: width, Height: height})
	p.FilledRect(0, 0, width, height, background, background, 0)
	y := pad
	for _, se := range s.Series {
		switch s.Kind {
		case Line:
			drawLine(p, s, se, y, width)
		default:
			drawBars(p, s, se, y, width)
		}
		y += panelHeight(s) + panelGap
	}
	text(p, s.Caption, pad, y+8, axisColor)
	return p.Bytes()
}

func panelHeight(s Spec) int {
	if s.Kind == Line {
		return titleHeight + lineHeight + axisHeight
	}
	return titleHeight + rowHeight*len(s.Labels) + axisHeight
}

func style(c charts.Color) charts.FontStyle {
	return charts.FontStyle{FontSize: fontSize, FontColor: c, Font: charts.GetDefaultFont()}
}

// text draws body with its baseline at y.
func text(p *charts.Painter, body string, x, y int, c charts.Color) {
	p.Text(body, x, y, 0, style(c))
}

func textWidth(p *charts.Painter, body string) int {
	return p.MeasureText(body, 0, style(textColor)).Width()
}

// fit shortens body with "…" until it is at most w pixels wide.
func fit(p *charts.Painter, body string, w int) string {
	if textWidth(p, body) <= w {
		return body
	}
	r := []rune(body)
	for len(r) > 1 && textWidth(p, string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// extent is the range an axis shows for a series: its values and
// interval ends, and zero for bars.
func extent(se Series, withZero bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	if withZero {
		lo, hi = 0, 0
	}
	for i, v := range se.Value {
		for _, x := range []float64{v, se.Lo[i], se.Hi[i]} {
			if finite(x) && !(se.FewRows[i] && x != v) {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// ticks are round values covering [lo, hi] (about n of them), and the
// range they span.
func ticks(lo, hi float64, n int) []float64 {
	step := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(step)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step <= m*mag {
			step = m * mag
			break
		}
	}
	var out []float64
	for t := math.Floor(lo/step) * step; t <= hi+step*1e-9; t += step {
		if t >= lo-step*1e-9 {
			out = append(out, t)
		}
	}
	return out
}

func tickText(t float64) string {
	if math.Abs(t) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(t, 'g', 6, 64)
}

// drawBars draws one series as horizontal bars with whiskers, its panel's
// top at y.
func drawBars(p *charts.Painter, s Spec, se Series, y, width int) {
	text(p, se.Name, pad, y+16, textColor)
	labelW := 0
	for _, l := range s.Labels {
		labelW = max(labelW, textWidth(p, l))
	}
	labelW = min(labelW, width/4)
	valueW := 0
	for _, t := range se.Text {
		valueW = max(valueW, textWidth(p, t))
	}
	valueW = min(valueW, width/3)
	left := pad + labelW + 10
	right := width - pad - valueW - 10
	lo, hi := extent(se, true)
	tks := ticks(lo, hi, 5)
	lo, hi = math.Min(lo, tks[0]), math.Max(hi, tks[len(tks)-1])
	x := func(v float64) int { return left + int(math.Round((v-lo)/(hi-lo)*float64(right-left))) }
	top := y + titleHeight
	bottom := top + rowHeight*len(s.Labels)
	for _, t := range tks {
		p.LineStroke([]charts.Point{{X: x(t), Y: top}, {X: x(t), Y: bottom}}, gridColor, 1)
	}
	for i, label := range s.Labels {
		cy := top + rowHeight*i + rowHeight/2
		text(p, fit(p, label, labelW), pad, cy+4, textColor)
		v := se.Value[i]
		if finite(v) {
			c := barColor
			if se.FewRows[i] {
				c = fewRowsColor
			}
			x0, x1 := x(0), x(v)
			if x1 < x0 {
				x0, x1 = x1, x0
			}
			p.FilledRect(x0, cy-barHeight/2, max(x1, x0+1), cy+barHeight/2, c, c, 0)
			if l, h := se.Lo[i], se.Hi[i]; finite(l) && finite(h) && !se.FewRows[i] {
				whisker(p, x(l), x(h), cy)
			}
		}
		text(p, fit(p, se.Text[i], valueW), right+10, cy+4, textColor)
	}
	p.LineStroke([]charts.Point{{X: x(0), Y: top}, {X: x(0), Y: bottom}}, axisColor, 1)
	p.LineStroke([]charts.Point{{X: left, Y: bottom}, {X: right, Y: bottom}}, axisColor, 1)
	for _, t := range tks {
		label := tickText(t)
		text(p, label, x(t)-textWidth(p, label)/2, bottom+16, axisColor)
	}
}

// whisker draws an interval from x0 to x1 at height cy, with end caps.
func whisker(p *charts.Painter, x0, x1, cy int) {
	p.LineStroke([]charts.Point{{X: x0, Y: cy}, {X: x1, Y: cy}}, whiskerColor, 1.5)
	for _, xe := range []int{x0, x1} {
		p.LineStroke([]charts.Point{{X: xe, Y: cy - 5}, {X: xe, Y: cy + 5}}, whiskerColor, 1.5)
	}
}

// drawLine draws one series over numeric keys: a band over the 95%
// intervals, the line through the values, a dot per row.
func drawLine(p *charts.Painter, s Spec, se Series, y, width int) {
	text(p, se.Name+" by "+s.Key, pad, y+16, textColor)
	vlo, vhi := extent(se, false)
	vt := ticks(vlo, vhi, 5)
	vlo, vhi = math.Min(vlo, vt[0]), math.Max(vhi, vt[len(vt)-1])
	tickW := 0
	for _, t := range vt {
		tickW = max(tickW, textWidth(p, tickText(t)))
	}
	left, right := pad+tickW+8, width-pad-10
	top := y + titleHeight + 8
	bottom := top + lineHeight - 8
	klo, khi := s.Keys[0], s.Keys[len(s.Keys)-1]
	if khi == klo {
		khi = klo + 1
	}
	kt := ticks(klo, khi, 8)
	X := func(k float64) int { return left + int(math.Round((k-klo)/(khi-klo)*float64(right-left))) }
	Y := func(v float64) int { return bottom - int(math.Round((v-vlo)/(vhi-vlo)*float64(bottom-top))) }
	for _, t := range vt {
		p.LineStroke([]charts.Point{{X: left, Y: Y(t)}, {X: right, Y: Y(t)}}, gridColor, 1)
		label := tickText(t)
		text(p, label, left-8-textWidth(p, label), Y(t)+4, axisColor)
	}
	// The band, one polygon per run of rows that have intervals.
	for i := 0; i < len(s.Keys); {
		j := i
		for j < len(s.Keys) && finite(se.Lo[j]) && finite(se.Hi[j]) && !se.FewRows[j] {
			j++
		}
		if j-i >= 2 {
			var pts []charts.Point
			for k := i; k < j; k++ {
				pts = append(pts, charts.Point{X: X(s.Keys[k]), Y: Y(se.Hi[k])})
			}
			for k := j - 1; k >= i; k-- {
				pts = append(pts, charts.Point{X: X(s.Keys[k]), Y: Y(se.Lo[k])})
			}
			pts = append(pts, pts[0])
			p.FillArea(pts, bandColor)
		} else if j-i == 1 {
			vx := X(s.Keys[i])
			p.LineStroke([]charts.Point{{X: vx, Y: Y(se.Lo[i])}, {X: vx, Y: Y(se.Hi[i])}}, whiskerColor, 1.5)
		}
		i = max(j, i+1)
	}
	var line []charts.Point
	flush := func() {
		if len(line) >= 2 {
			p.LineStroke(line, barColor, 2)
		}
		line = nil
	}
	for i, k := range s.Keys {
		if !finite(se.Value[i]) {
			flush()
			continue
		}
		line = append(line, charts.Point{X: X(k), Y: Y(se.Value[i])})
	}
	flush()
	for i, k := range s.Keys {
		if finite(se.Value[i]) {
			c := barColor
			if se.FewRows[i] {
				c = fewRowsColor
			}
			p.Circle(3, X(k), Y(se.Value[i]), c, c, 1)
		}
	}
	p.LineStroke([]charts.Point{{X: left, Y: bottom}, {X: right, Y: bottom}}, axisColor, 1)
	for _, t := range kt {
		if t < klo || t > khi {
			continue
		}
		label := tickText(t)
		text(p, label, X(t)-textWidth(p, label)/2, bottom+16, axisColor)
	}
}

// Extension is the file name extension of a format ("svg" → ".svg").
func Extension(format string) string { return "." + strings.ToLower(format) }
