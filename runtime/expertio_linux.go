package runtime

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openDirect opens path for O_DIRECT reads; a test swaps it to stand in
// for a filesystem that refuses direct I/O.
var openDirect = func(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECT, 0)
}

// openExpertFile opens path for expert reads with O_DIRECT, probing one
// aligned read into probe: a filesystem without direct I/O (tmpfs before
// Linux 6.6, some FUSE and network mounts) refuses with EINVAL at open or
// at the first read, and then the file is opened for buffered pread
// instead, with the reason returned for run's summary.
func openExpertFile(path string, probe []byte) (fd int, direct bool, why string, err error) {
	fd, err = openDirect(path)
	if err == nil {
		if _, err = preadFull(fd, probe, 0); err == nil {
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
