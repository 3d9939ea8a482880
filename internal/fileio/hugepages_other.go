//go:build !linux

package fileio

import "errors"

// errNoSmaps is what the page-size reports return where there is no
// /proc/self/smaps or THP (everything but Linux).
var errNoSmaps = errors.New("huge-page reports need Linux (/proc/self/smaps)")

// adviseHuge does nothing: MADV_HUGEPAGE is asked for on Linux only
// (hugepages_linux.go).
func adviseHuge([]byte) {}

// MappedHugePages is reported on Linux only.
func MappedHugePages([]byte) (HugePages, error) { return HugePages{}, errNoSmaps }

// THPEnabled is "" where there is no Linux THP.
func THPEnabled() string { return "" }

// DropPageCache does nothing elsewhere: the folio sizes it fixes are
// Linux's.
func DropPageCache(string) error { return nil }
