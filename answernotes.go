package dpsql

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// chosenBoundNotes are the notes of an answer about bounds it chose
// privately: a warning, with the private estimate of the share of values
// clipped, when that share is autobound.WarnShare or more, when the estimate
// cannot rule out half (too few rows for the ε), or when the bounds
// collapsed; else, with show_bounds, the bounds and the estimate.
// warns reports whether an answer with bounds c carries a warning: they
// collapsed, or the estimated share of values beyond them is WarnShare
// or more, or its 95% figure reaches a half.
func warns(c exec.ChosenBound) bool {
	return c.Collapsed || c.Clipped.Share() >= autobound.WarnShare || c.Clipped.MaxShare() >= 0.5
}

func chosenBoundNotes(c exec.ChosenBound, show bool) []string {
	est := fmt.Sprintf("an estimated %.3g%% of its values lie beyond them (95%%: up to %.3g%%; counted privately, from the query's ε)", 100*c.Clipped.Share(), 100*c.Clipped.MaxShare())
	fix := "declare bounds (ALTER PRIVACY POLICY ... SET BOUNDS, or contribution_bounds_per_row => (lo, hi)) or spend more ε"
	switch {
	case c.Collapsed:
		return []string{fmt.Sprintf("warning: the bounds of %s chosen privately collapsed to [%g, %g]: too few rows stood above the search's noise threshold (about %.3g rows), so the answer reflects the bounds, not the data; %s; %s", c.Label, c.Lo, c.Hi, c.Threshold, est, fix)}
	case warns(c):
		return []string{fmt.Sprintf("warning: the bounds of %s chosen privately, [%g, %g], clip: %s, so the answer may be well below (or above) the data's; %s", c.Label, c.Lo, c.Hi, est, fix)}
	case show:
		return []string{fmt.Sprintf("bounds of %s chosen privately: [%g, %g]; %s", c.Label, c.Lo, c.Hi, est)}
	}
	return nil
}

// DroppedWarnShare is the estimated share of a unit's rows, on average,
// that bounding dropped from which an answer's note is a warning.
const DroppedWarnShare = 0.1

// droppedNote is an answer's note on what contribution bounding dropped:
// the private estimates of the share of units that lost a row and of the
// share of a unit's rows dropped (on average), with their 95% ranges; a
// warning from DroppedWarnShare of the rows.
func droppedNote(d *exec.Dropped, unit string) string {
	pct := func(x float64) string { return fmt.Sprintf("%.3g%%", 100*x) }
	if unit == "" { // a join that can repeat a row of a table whose rows are its units
		unit = "unit (a row of the private table)"
	}
	ulo, uhi := d.UnitsRange()
	rlo, rhi := d.RowsRange()
	what := fmt.Sprintf("contribution bounding (at most %d group(s) and %d row(s) per group for each %s) dropped rows of an estimated %s of the units (95%%: %s to %s), on average %s of a unit's rows (95%%: %s to %s; estimated privately, from the query's ε)",
		d.MaxGroups, d.MaxRows, unit, pct(d.UnitsShare()), pct(ulo), pct(uhi), pct(d.RowsShare()), pct(rlo), pct(rhi))
	if d.RowsShare() >= DroppedWarnShare {
		return "warning: " + what + ": the answer counts only the rows kept, so counts and sums may be well below the data's; raise max_groups_contributed or max_rows_contributed (OPTIONS, or the policy) where the noise that adds is worth it"
	}
	return what + "; the intervals are about the rows kept"
}

// textArgumentNotes say when a sum, average or variance reads a TEXT
// column: each value counts as CAST(value AS REAL) — text that is not a
// number counts as 0 — and is clipped to the bounds, which is rarely what
// was meant.
func textArgumentNotes(p *planner.PrivateQuery, cat *catalog.Catalog) []string {
	var notes []string
	seen := map[string]bool{}
	for _, a := range p.Aggregates {
		if a.Kind == planner.AggCount || len(a.Cells) == 0 {
			continue
		}
		ref, ok := p.Cells[a.Cells[0]].Arg.(*parser.ColumnRef)
		if !ok || seen[ref.Name] {
			continue
		}
		for table := range p.Reads {
			t, ok := cat.Table(table)
			if !ok {
				continue
			}
			if col, ok := t.Column(ref.Name); ok && castType(col.Type) == TypeText {
				seen[ref.Name] = true
				notes = append(notes, fmt.Sprintf("%s reads %s, a TEXT column: each value counts as CAST(value AS REAL) — text that is not a number counts as 0 — clipped to the bounds", a.Text, parser.QuoteIdent(col.Name)))
				break
			}
		}
	}
	return notes
}

// clippedNote names the values computed from clipped values and their
// bounds (the first row's: bounds are per aggregate, the same in every
// group), or "". Where a bound was chosen privately it also says what the
// intervals allow for beyond it (exec.ChosenBound.TailExcess, the first
// row's allowance per value), or that the tail was too heavy to allow for.
func clippedNote(res *Result, chosen []exec.ChosenBound) string {
	if len(res.Intervals) == 0 {
		return ""
	}
	var parts, tails []string
	heavy := map[float64]bool{}
	for j, iv := range res.Intervals[0] {
		if iv == nil || !iv.Clipped || j >= len(res.Columns) {
			continue
		}
		part := fmt.Sprintf("%s [%g, %g]", res.Columns[j], iv.ClipLo, iv.ClipHi)
		for _, c := range chosen {
			if c.Lo != iv.ClipLo || c.Hi != iv.ClipHi {
				continue
			}
			part += " (chosen privately)" // not declared: a release of the data, with its own note
			switch {
			case c.TailHeavy && !heavy[c.Hi]:
				heavy[c.Hi] = true
				tails = append(tails, fmt.Sprintf("beyond %g the values thin out too slowly to extrapolate, and no interval allows for them", c.Hi))
			case iv.Tail > 0 && tailVaries(res, j):
				tails = append(tails, fmt.Sprintf("the intervals of %s reach higher to allow for values beyond %g, by the allowance over each group's count (%.3g in the first row; extrapolated from the bound search)", res.Columns[j], c.Hi, iv.Tail))
			case iv.Tail > 0:
				tails = append(tails, fmt.Sprintf("the interval of %s reaches %.3g higher to allow for values beyond %g (extrapolated from the bound search)", res.Columns[j], iv.Tail, c.Hi))
			}
			break
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	about := "the intervals are about the clipped values"
	if len(tails) > 0 {
		about += "; " + strings.Join(tails, "; ")
	}
	return "values clipped to bounds: " + strings.Join(parts, ", ") + " (" + about + ")"
}

// tailVaries reports whether column j's tail allowance differs between
// rows (an AVG's: the allowance over each group's count).
func tailVaries(res *Result, j int) bool {
	first := res.Intervals[0][j].Tail
	for _, row := range res.Intervals[1:] {
		if j < len(row) && row[j] != nil && row[j].Tail != first {
			return true
		}
	}
	return false
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
