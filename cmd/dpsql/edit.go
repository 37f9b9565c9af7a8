package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/chzyer/readline"
)

// editorCommand is the user's editor: $VISUAL, else $EDITOR, else vi
// (as psql picks it), split into the program and its arguments.
func editorCommand() []string {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if f := strings.Fields(os.Getenv(v)); len(f) > 0 {
			return f
		}
	}
	return []string{"vi"}
}

// editCommand is .edit [FILE] (psql's \e): the file, or the last
// statement in a temporary file, opens in the user's editor; what it
// holds when the editor exits is run. Interactive shells only.
func (s *shell) editCommand(ctx context.Context, cmd string, args []string) bool {
	if s.stdin == nil {
		s.fail("%s opens an editor: it works in the interactive shell, not in scripts", cmd)
		return false
	}
	if len(args) > 1 {
		s.fail("%s takes at most one FILE", cmd)
		return false
	}
	path := ""
	if len(args) == 1 {
		path = args[0]
	} else {
		f, err := os.CreateTemp("", "dpsql-edit-*.sql")
		if err != nil {
			s.fail("%v", err)
			return false
		}
		_, err = f.WriteString(s.last)
		f.Close()
		if err != nil {
			s.fail("%v", err)
			return false
		}
		path = f.Name()
		defer os.Remove(path)
	}
	ed := editorCommand()
	c := exec.CommandContext(ctx, ed[0], append(ed[1:], path)...)
	c.Stdin, c.Stdout, c.Stderr = s.stdin, s.out, s.errw
	if err := c.Run(); err != nil {
		s.fail("the editor (%s) failed: %v; nothing was run", strings.Join(ed, " "), err)
		return false
	}
	src, err := os.ReadFile(path)
	if err != nil {
		s.fail("%v", err)
		return false
	}
	text := strings.TrimSpace(string(src))
	if text == "" {
		return false
	}
	io.WriteString(s.out, text+"\n") // echoed, as psql does before running it
	s.last = text
	runCancellable(ctx, func(qctx context.Context) { s.script(qctx, text, "") })
	return false
}

// pagerCommand is the user's pager: $PAGER, else less -FX (which wraps
// long lines, as the terminal does, and quits when the output fits the
// screen); nil when PAGER is set empty.
func pagerCommand() []string {
	v, set := os.LookupEnv("PAGER")
	if set {
		if f := strings.Fields(v); len(f) > 0 {
			return f
		}
		return nil
	}
	if _, err := exec.LookPath("less"); err == nil {
		return []string{"less", "-FX"}
	}
	return nil
}

// page shows out: through the pager when the shell pages and out is
// taller than the terminal (its lines wrapped), else as it is.
func (s *shell) page(out []byte) {
	if len(out) == 0 {
		return
	}
	if s.pager != nil {
		w, h, err := readline.GetSize(int(s.termFd))
		if err == nil && tooBig(out, w, h) {
			c := exec.Command(s.pager[0], s.pager[1:]...)
			c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(out), s.out, s.errw
			if err := c.Run(); err == nil {
				return
			} else if !errors.Is(err, exec.ErrNotFound) {
				s.fail("the pager (%s) failed: %v", strings.Join(s.pager, " "), err)
			}
		}
	}
	s.out.Write(out)
}

// tooBig reports whether out, its long lines wrapped as a terminal of
// width columns wraps them, takes more lines than the screen leaves room
// for. As psql, only height counts: a wide answer that fits in height is
// printed (the terminal wraps it) and does not wait at a pager's (END).
func tooBig(out []byte, width, height int) bool {
	if height <= 0 {
		return false
	}
	rows := 0
	for _, l := range bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n")) {
		rows++
		if w := displayWidth(string(l)); width > 0 && w > width {
			rows += (w - 1) / width
		}
	}
	return rows > height-2
}
