// Package fileio is the operating-system side of reading and writing model
// files, kept out of the format packages so that cflowfmt and vflowfmt are
// bytes only (as debug/elf is): the all-or-nothing output Sink and the
// output rules every command shares (CheckOutput, Target: a symlink is
// followed, a FIFO, device, socket or /proc entry refused), bounded whole
// reads of files named by flags, read-only mappings asking for 2 MiB pages
// (MapFile, MappedHugePages, Recache, DropPageCache), and the guards that
// turn a read of a truncated mapping into a *FaultError instead of a SIGBUS
// crash. It knows nothing of tiles, headers or models.
package fileio
