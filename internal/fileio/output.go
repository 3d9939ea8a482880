package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OutputError is every failure to put an output file in place: a path that
// is not a regular file, a directory that does not exist, a refused
// overwrite, a write or rename that failed. It is the user's path or the
// user's disk, never a bug of ours, so the CLI answers it with exit 2.
type OutputError struct {
	Path string // the output path as the user gave it
	Err  error
}

func (e *OutputError) Error() string { return fmt.Sprintf("output %s: %v", e.Path, e.Err) }

// Unwrap is the underlying cause (an *fs.PathError, ENOSPC, …).
func (e *OutputError) Unwrap() error { return e.Err }

// maxLinkHops bounds symlink following as the kernel does (ELOOP after 40).
const maxLinkHops = 40

// Target is the file an output path names: the path itself, or, for a
// symlink, the file at the end of its chain (followed even when that file
// does not exist yet), so a link to a model is written through and stays a
// link. It refuses, with an *OutputError, an existing path that is not a
// regular file — a directory, a FIFO, a device node, a socket — and any
// path on /proc or /sys (their entries, such as /proc/self/fd/1, are not
// files a rename may replace): writing there replaced /dev/null with a
// regular file when run as root.
func Target(path string) (string, error) {
	bad := func(format string, a ...any) (string, error) {
		return "", &OutputError{Path: path, Err: fmt.Errorf(format, a...)}
	}
	if path == "" {
		return bad("empty path")
	}
	p := path
	for hops := 0; ; hops++ {
		if kind := pseudoFS(filepath.Dir(p)); kind != "" {
			return bad("%s is on %s, not a file system for files; give a file path", p, kind)
		}
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil // a new file
		}
		if err != nil {
			return bad("%v", err)
		}
		mode := st.Mode()
		switch {
		case mode.IsRegular():
			return p, nil
		case mode.IsDir():
			return bad("%s is an existing directory; give a file path", p)
		case mode&fs.ModeSymlink == 0:
			return bad("%s is not a regular file (%s); refusing to replace it", p, kindOf(mode))
		case hops == maxLinkHops:
			return bad("more than %d symbolic links", maxLinkHops)
		}
		l, err := os.Readlink(p)
		if err != nil {
			return bad("%v", err)
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(p), l)
		}
		p = l
	}
}

// pseudoFS names the kernel file system dir is on when it is /proc or
// /sys, "" otherwise (or when dir cannot be examined: the create reports
// that).
func pseudoFS(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return ""
	}
	switch st.Type {
	case unix.PROC_SUPER_MAGIC:
		return "/proc"
	case unix.SYSFS_MAGIC:
		return "/sys"
	}
	return ""
}

// kindOf names a non-regular file type for an error message.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// CheckOutput is run by every command before it does any work for an
// output path: the path must resolve (Target) to a regular file or a new
// one, its directory must exist, and it must not be one of the inputs
// (compared by device and inode, so a symlink, a hard link or another
// spelling of the same file is caught; an input directory's files count as
// inputs). The sink's rename would otherwise replace the model being read,
// a FIFO or a device — or, for a directory, fail only after the whole
// conversion. Its errors are *OutputError.
func CheckOutput(out string, inputs ...string) error {
	target, err := Target(out)
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return &OutputError{Path: out, Err: fmt.Errorf(format, a...)}
	}
	if st, err := os.Stat(filepath.Dir(target)); err != nil {
		return bad("%v", err)
	} else if !st.IsDir() {
		return bad("%s is not a directory", filepath.Dir(target))
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil // a new file
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // the command reports a missing input itself
		}
		if os.SameFile(st, ist) {
			return bad("is the input %s (same file); refusing to overwrite it", in)
		}
		if !ist.IsDir() {
			continue
		}
		ents, _ := os.ReadDir(in)
		for _, e := range ents {
			if est, err := os.Stat(filepath.Join(in, e.Name())); err == nil && os.SameFile(st, est) {
				return bad("is %s of the input directory (same file); refusing to overwrite it", e.Name())
			}
		}
	}
	return nil
}
