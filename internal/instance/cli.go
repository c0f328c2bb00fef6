package instance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// Main is `mooring instance <command>`: "install <dir>" (the init container) copies the
// running binary into dir; "run <flags>" (the database container) runs the instance.
// It returns the process's exit code.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mooring instance install <dir> | run --engine=... --version=... --port=...")
		return 2
	}
	switch args[0] {
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, "usage: mooring instance install <dir>")
			return 2
		}
		if err := Install(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "instance install:", err)
			return 1
		}
		return 0
	case "run":
		cfg, err := ParseConfig(args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "instance run:", err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if err := Run(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "instance run:", err)
			writeTerminationMessage(err.Error())
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "mooring instance: unknown command %q\n", args[0])
	return 2
}

// ManagerPath is where the database container finds the manager the init container
// installed.
func ManagerPath(dir string) string { return filepath.Join(dir, "mooring") }

// Install copies the running executable to dir/mooring, executable by everyone: the
// database image's user runs it.
func Install(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close() //nolint:errcheck // read only
	tmp := ManagerPath(dir) + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		return errors.Join(err, dst.Close())
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, ManagerPath(dir))
}
