//go:build !linux

package fileio

// Recached is what Recache measured (recache_linux.go).
type Recached struct {
	Path          string
	Before, After HugePages
}

// Recache needs Linux's page cache and THP; elsewhere it is an error.
func Recache(path string, progress func(done, total int64)) (Recached, error) {
	return Recached{Path: path}, errNoSmaps
}
