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
}

// newChartFile checks path's extension.
func newChartFile(path string, done func(string)) (*chartFile, error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != chart.SVG && format != chart.PNG {
		return nil, fmt.Errorf("--chart %s: the file name must end in .svg or .png (the image's format)", path)
	}
	return &chartFile{path: path, format: format, done: done}, nil
}

// write draws r's chart, if its shape has one (a key and numeric columns,
// or numeric columns alone), and reports whether it did.
func (c *chartFile) write(r *dpsql.Result) (bool, error) {
	spec := chart.FromResult(r)
	if spec.Kind == chart.None {
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
