package expertio

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openDirectFile opens path for O_DIRECT reads.
func openDirectFile(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECT, 0)
}

// openExpertFile opens path for expert reads with O_DIRECT, probing one
// aligned read into probe: a filesystem without direct I/O (tmpfs before
// Linux 6.6, some FUSE and network mounts) refuses with EINVAL at open or
// at the first read, and then the file is opened for buffered pread
// instead, with the reason returned for run's summary. openDirect, when
// not nil, replaces openDirectFile (a test's refusing filesystem).
func openExpertFile(path string, probe []byte, openDirect func(string) (int, error)) (fd int, direct bool, why string, err error) {
	if openDirect == nil {
		openDirect = openDirectFile
	}
	fd, err = openDirect(path)
	if err == nil {
		if _, err = ReadFull(fd, probe, 0); err == nil {
			return fd, true, "", nil
		}
		unix.Close(fd)
	}
	if !errors.Is(err, unix.EINVAL) {
		return -1, false, "", &pathError{path, err}
	}
	why = "O_DIRECT unsupported here (" + err.Error() + ")"
	fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, "", &pathError{path, err}
	}
	return fd, false, why, nil
}

func closeExpertFile(fd int) { unix.Close(fd) }

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
