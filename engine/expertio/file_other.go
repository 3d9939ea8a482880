//go:build !linux

package expertio

import "golang.org/x/sys/unix"

// openExpertFile: outside Linux the expert tier reads with buffered pread
// (the project maps files with x/sys/unix, so it is Unix-only anyway); the
// modes' schedules — sync at routing, direct at injection — are unchanged.
func openExpertFile(path string, _ []byte, _ func(string) (int, error)) (int, bool, string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, "", err
	}
	return fd, false, "O_DIRECT is used on Linux only", nil
}

func closeExpertFile(fd int) { unix.Close(fd) }
