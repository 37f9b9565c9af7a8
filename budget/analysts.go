package budget

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"github.com/dpsql/dpsql/dperr"
	"time"
)

// Analysts are the users a dpsql server authenticates. Each has a budget
// of their own, and the database's total caps what all of them (and local
// sessions on the file) spend together; both are checked in the same
// transaction that records a charge (ChargeFirst). The ledger records who
// spent what. A dropped analyst's charges stay in the ledger and keep
// counting against the database's total; an analyst created again under
// the same name finds them counted against the new budget too.

// Errors about analysts, checkable with errors.Is.
var (
	ErrUnknownAnalyst = dperr.UnknownAnalyst
	ErrAnalystExists  = dperr.AnalystExists
)

// Analyst is one analyst as SHOW ANALYSTS lists them.
type Analyst struct {
	Name    string
	Created string
	Status  Status // their own budget; Status.Set is false without one
}

// CreateAnalyst adds an analyst with a password verifier (never the
// password) and, if total is not nil, a budget of their own.
func CreateAnalyst(ctx context.Context, s *Store, name, verifier string, total *Cost) error {
	if err := validateAnalystBudget(total); err != nil {
		return err
	}
	var eps, delta, eu, du any
	if total != nil {
		eps, delta = total.Epsilon, total.Delta
		eu, du = toUnits(total.Epsilon, EpsilonUnit, false), toUnits(total.Delta, DeltaUnit, false)
	}
	res, err := s.on(s.db).ExecContext(ctx, `INSERT INTO _dpsql_analysts (name, verifier, epsilon, delta, epsilon_units, delta_units, created)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		name, verifier, eps, delta, eu, du, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", ErrAnalystExists, name)
	}
	return nil
}

// AlterAnalyst changes an analyst's password verifier and/or budget (nil:
// unchanged). What they spent stays spent.
func AlterAnalyst(ctx context.Context, s *Store, name string, verifier *string, total *Cost) error {
	if err := validateAnalystBudget(total); err != nil {
		return err
	}
	return s.locked(ctx, func(tx spoken) error { return alterAnalyst(ctx, tx, name, verifier, total) })
}

func alterAnalyst(ctx context.Context, tx spoken, name string, verifier *string, total *Cost) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM _dpsql_analysts WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %q", ErrUnknownAnalyst, name)
	}
	if verifier != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE _dpsql_analysts SET verifier = ? WHERE name = ?`, *verifier, name); err != nil {
			return err
		}
	}
	if total != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE _dpsql_analysts SET epsilon = ?, delta = ?, epsilon_units = ?, delta_units = ? WHERE name = ?`,
			total.Epsilon, total.Delta, toUnits(total.Epsilon, EpsilonUnit, false), toUnits(total.Delta, DeltaUnit, false), name); err != nil {
			return err
		}
	}
	return nil
}

func validateAnalystBudget(total *Cost) error {
	if total == nil {
		return nil
	}
	if err := total.validate(); err != nil {
		return err
	}
	if total.Epsilon == 0 {
		return fmt.Errorf("%w: an analyst's epsilon must be positive", ErrInvalidCost)
	}
	return nil
}

// DropAnalyst removes an analyst: they can no longer log in. Their charges
// stay in the ledger.
func DropAnalyst(ctx context.Context, s *Store, name string) error {
	res, err := s.on(s.db).ExecContext(ctx, `DELETE FROM _dpsql_analysts WHERE name = ?`, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", ErrUnknownAnalyst, name)
	}
	return nil
}

// Verifier returns an analyst's stored password verifier; ok is false for
// an unknown name.
func Verifier(ctx context.Context, s *Store, name string) (verifier string, ok bool, err error) {
	err = s.on(s.db).QueryRowContext(ctx, `SELECT verifier FROM _dpsql_analysts WHERE name = ?`, name).Scan(&verifier)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return verifier, err == nil, err
}

// Analysts lists every analyst with their budget, by name.
func Analysts(ctx context.Context, s *Store) ([]Analyst, error) {
	rows, err := s.on(s.db).QueryContext(ctx, `SELECT name, created FROM _dpsql_analysts ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var out []Analyst
	for rows.Next() {
		var a Analyst
		if err := rows.Scan(&a.Name, &a.Created); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Status, err = GetAnalystStatus(ctx, s, out[i].Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AuthSecret returns the database's secret for authentication decoys
// (auth.Decoy), creating it on first use: 32 random bytes kept in
// _dpsql_auth_secret, so that an unknown user's decoy salt stays the same
// across server restarts, as a real user's does.
func AuthSecret(ctx context.Context, s *Store) ([]byte, error) {
	db := s.on(s.db)
	var secret []byte
	err := db.QueryRowContext(ctx, `SELECT secret FROM _dpsql_auth_secret WHERE id = 1`).Scan(&secret)
	if err == nil && len(secret) == 32 {
		return secret, nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	if !s.postgres { // PostgreSQL's table is part of its schema (Init)
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS _dpsql_auth_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL)`); err != nil {
			return nil, err
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO _dpsql_auth_secret (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`, fresh); err != nil {
		return nil, err
	}
	// Another process may have created it first: read what was kept.
	if err := db.QueryRowContext(ctx, `SELECT secret FROM _dpsql_auth_secret WHERE id = 1`).Scan(&secret); err != nil {
		return nil, err
	}
	return secret, nil
}
