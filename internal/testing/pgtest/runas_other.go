//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
	"os/user"
)

// runAs is Unix only: elsewhere the tests do not run as root.
func runAs(*exec.Cmd, *user.User) error {
	return errors.New("pgtest: running the server as another user needs Unix")
}
