package numa

import "golang.org/x/sys/unix"

// adviseHugeArena asks for 2 MiB pages over a node's tile copies
// (MADV_HUGEPAGE) before they are first touched. With THP "madvise", the
// common default, anonymous memory is otherwise mapped in 4 KiB pages,
// and a decode token's stream through hundreds of MB of copies then
// misses the TLB every 4 KiB, as the file mapping did before it asked
// for them (cflowfmt's adviseHuge). A hint: an error only means small
// pages, which still work.
func adviseHugeArena(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
