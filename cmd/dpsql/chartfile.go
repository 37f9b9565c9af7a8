package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/chart"
)

// chartFile writes results' charts to image files (--chart FILE, .chart
// FILE in the shell): the first result with a chart to FILE, later ones to
// FILE-2, FILE-3, ... before the extension, which says the format (.svg or
// .png).
type chartFile struct {
	path   string
	format string
	n      int
	// done is told each file written.
	done func(path string)
	// skipped is told why an answer of a private query got no chart.
	skipped func(why string)
}

// newChartFile checks path's extension.
func newChartFile(path string, done func(string)) (*chartFile, error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != chart.SVG && format != chart.PNG {
		return nil, fmt.Errorf("--chart %s: the file name must end in .svg or .png (the image's format)", path)
	}
	// A chart that cannot be written must be found out before a query is
	// charged: the directory must exist and take a new file.
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("--chart %s: is a directory; give the image's file name", path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--chart %s: the directory %s does not exist", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".dpsql-chart-*")
	if err != nil {
		return nil, fmt.Errorf("--chart %s: cannot write in %s: %v", path, dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return &chartFile{path: path, format: format, done: done}, nil
}

// write draws r's chart, if it has one (noisy numeric values, with or
// without keys), and reports whether it did.
func (c *chartFile) write(r *dpsql.Result) (bool, error) {
	spec := chart.FromResult(r)
	if spec.Kind == chart.None {
		if r.Intervals != nil && len(r.Rows) > 0 && c.skipped != nil {
			c.skipped("no chart for this answer: a chart draws aggregates (COUNT, SUM, AVG ...) with their intervals, and it has none")
		}
		return false, nil
	}
	img, err := chart.Render(spec, c.format, 0)
	if err != nil {
		return false, err
	}
	c.n++
	path := c.path
	if c.n > 1 {
		ext := filepath.Ext(path)
		path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), c.n, ext)
	}
	// Private to the user, as every file dpsql writes beside the
	// database (the values are released ones, but the file is theirs to
	// share).
	if err := os.WriteFile(path, img, 0o600); err != nil {
		return false, err
	}
	if c.done != nil {
		c.done(path)
	}
	return true, nil
}
