package fileio

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// writebackChunk is how many bytes a Sink hands the kernel between two
// write-back requests.
const writebackChunk = 32 << 20

// writeback starts the disk writes of a Sink's output as it grows, so the
// fsync at Commit waits for the last chunk only instead of the whole file:
// every writebackChunk bytes handed to the kernel, a goroutine asks it to
// start writing them out (sync_file_range, SYNC_FILE_RANGE_WRITE: it
// queues the I/O and returns; it never waits for it to finish). The
// writer never waits for it either: a request the goroutine is not ready
// for is dropped, since Commit's fsync covers everything anyway.
type writeback struct {
	issued int64 // bytes already requested
	reqs   chan [2]int64
	wg     sync.WaitGroup
}

// written records that the first n bytes of f are with the kernel.
func (w *writeback) written(f *os.File, n int64) {
	if n-w.issued < writebackChunk {
		return
	}
	if w.reqs == nil {
		w.reqs = make(chan [2]int64, 4)
		w.wg.Add(1)
		fd := int(f.Fd())
		go func() {
			defer w.wg.Done()
			for r := range w.reqs {
				_ = unix.SyncFileRange(fd, r[0], r[1], unix.SYNC_FILE_RANGE_WRITE)
			}
		}()
	}
	select {
	case w.reqs <- [2]int64{w.issued, n - w.issued}:
		w.issued = n
	default:
	}
}

// stop ends the goroutine, before the file is synced or closed.
func (w *writeback) stop() {
	if w.reqs != nil {
		close(w.reqs)
		w.wg.Wait()
		w.reqs = nil
	}
}
