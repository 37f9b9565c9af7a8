package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/dpsql/dpsql/dperr"
)

// Threshold watches: a sparse vector run kept across queries (Lyu, Su &
// Li's interactive setting). An analyst opens a watch with a threshold, a
// sensitivity bound, a cutoff c and an ε, charged once when it opens; its
// noisy threshold is drawn then and stored with it, in the same
// transaction as the charge, so a watch exists only if it was paid for and
// its threshold is never drawn again (not after a restart, a crash or in
// another session). Each later query to the watch is answered "above" or
// "below" in a transaction that holds the ledger's lock — queries to a
// watch are serialized across sessions and processes — and an "above" is
// counted there before the answer leaves; the c-th closes the watch.

// Errors about watches, checkable with errors.Is.
var (
	ErrUnknownWatch = dperr.UnknownWatch
	ErrWatchExists  = dperr.WatchExists
	ErrWatchClosed  = dperr.WatchClosed
)

// Watch is one threshold watch. NoisyThreshold is secret: it is read only
// to answer the watch's queries, never shown.
type Watch struct {
	Name        string
	Threshold   float64
	Sensitivity float64
	Cutoff      int
	Epsilon     float64
	Monotonic   bool
	// NoisyThreshold is T + ρ, drawn once when the watch opened.
	NoisyThreshold float64
	Asked, Above   int
	Created        string
}

// Left is how many more "above" answers the watch gives before it closes.
func (w Watch) Left() int { return max(0, w.Cutoff-w.Above) }

// OpenWatch charges c (to analyst's budget and the database's) and
// records the watch in the same transaction, with the noisy threshold
// draw returns (called once, after the charge is admitted, before the
// commit). A watch of that name the analyst already has is refused
// before anything is charged.
func OpenWatch(ctx context.Context, s *Store, analyst string, w Watch, c Charge, statement string, draw func() (float64, error)) (Watch, error) {
	if _, err := GetWatch(ctx, s, analyst, w.Name); err == nil {
		return Watch{}, fmt.Errorf("%w: %q (SHOW WATCHES lists yours)", ErrWatchExists, w.Name)
	} else if !errors.Is(err, ErrUnknownWatch) {
		return Watch{}, err
	}
	w.Created = time.Now().UTC().Format(time.RFC3339)
	_, _, err := chargeFirst(ctx, s, analyst, []Charge{c}, statement, nil, nil, func(ctx context.Context, x spoken, id int64) error {
		t, err := draw()
		if err != nil {
			return err
		}
		w.NoisyThreshold = t
		res, err := x.ExecContext(ctx, `INSERT INTO _dpsql_watches (analyst, name, threshold, sensitivity, cutoff, epsilon, monotonic, noisy_threshold, asked, above, ledger_id, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?) ON CONFLICT (analyst, name) DO NOTHING`,
			analyst, w.Name, w.Threshold, w.Sensitivity, w.Cutoff, w.Epsilon, boolInt(w.Monotonic), t, id, w.Created)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %q", ErrWatchExists, w.Name) // opened meanwhile: this charge rolls back
		}
		return nil
	})
	return w, err
}

// AskWatch answers one query to analyst's watch: in a transaction that
// holds the ledger's lock it reads the watch, calls answer with it (which
// adds the query's noise and compares), counts the query and, for an
// "above", the above, and commits before returning the answer. A closed
// watch answers nothing.
func AskWatch(ctx context.Context, s *Store, analyst, name string, answer func(Watch) (bool, error)) (Watch, bool, error) {
	var w Watch
	var above bool
	err := s.locked(ctx, func(x spoken) error {
		var err error
		if w, err = readWatch(ctx, x, analyst, name); err != nil {
			return err
		}
		if w.Left() == 0 {
			return fmt.Errorf("%w: %q gave its %d \"above\" answer(s); open another", ErrWatchClosed, name, w.Cutoff)
		}
		if above, err = answer(w); err != nil {
			return err
		}
		w.Asked++
		if above {
			w.Above++
		}
		_, err = x.ExecContext(ctx, `UPDATE _dpsql_watches SET asked = ?, above = ? WHERE analyst = ? AND name = ?`, w.Asked, w.Above, analyst, name)
		return err
	})
	if err != nil {
		return Watch{}, false, err
	}
	return w, above, nil
}

// GetWatch reads one of analyst's watches.
func GetWatch(ctx context.Context, s *Store, analyst, name string) (Watch, error) {
	return readWatch(ctx, s.on(s.db), analyst, name)
}

func readWatch(ctx context.Context, x spoken, analyst, name string) (Watch, error) {
	w := Watch{Name: name}
	var mono int
	err := x.QueryRowContext(ctx, `SELECT threshold, sensitivity, cutoff, epsilon, monotonic, noisy_threshold, asked, above, created
		FROM _dpsql_watches WHERE analyst = ? AND name = ?`, analyst, name).Scan(
		&w.Threshold, &w.Sensitivity, &w.Cutoff, &w.Epsilon, &mono, &w.NoisyThreshold, &w.Asked, &w.Above, &w.Created)
	if errors.Is(err, sql.ErrNoRows) {
		return Watch{}, fmt.Errorf("%w: %q (SHOW WATCHES lists yours)", ErrUnknownWatch, name)
	}
	w.Monotonic = mono != 0
	return w, err
}

// Watches lists analyst's watches, oldest first (their noisy thresholds
// left out).
func Watches(ctx context.Context, s *Store, analyst string) ([]Watch, error) {
	rows, err := s.on(s.db).QueryContext(ctx, `SELECT name, threshold, sensitivity, cutoff, epsilon, monotonic, asked, above, created
		FROM _dpsql_watches WHERE analyst = ? ORDER BY ledger_id`, analyst)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Watch
	for rows.Next() {
		var w Watch
		var mono int
		if err := rows.Scan(&w.Name, &w.Threshold, &w.Sensitivity, &w.Cutoff, &w.Epsilon, &mono, &w.Asked, &w.Above, &w.Created); err != nil {
			return nil, err
		}
		w.Monotonic = mono != 0
		out = append(out, w)
	}
	return out, rows.Err()
}

// DropWatch removes one of analyst's watches (its ε stays spent).
func DropWatch(ctx context.Context, s *Store, analyst, name string) error {
	return s.locked(ctx, func(x spoken) error {
		res, err := x.ExecContext(ctx, `DELETE FROM _dpsql_watches WHERE analyst = ? AND name = ?`, analyst, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %q", ErrUnknownWatch, name)
		}
		return nil
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
