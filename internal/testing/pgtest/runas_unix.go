//go:build unix

package pgtest

import (
	"fmt"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// runAs makes cmd run as u (the caller is root).
func runAs(cmd *exec.Cmd, u *user.User) error {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return fmt.Errorf("pgtest: user %s: uid %q", u.Username, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return fmt.Errorf("pgtest: user %s: gid %q", u.Username, u.Gid)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	return nil
}
