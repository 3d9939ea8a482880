package convert

import (
	"io"
	"sync/atomic"

	"github.com/schollz/progressbar/v3"
)

// progress shows a byte-counting bar (MB/s, ETA) when enabled; counting is
// cheap enough to run unconditionally.
type progress struct {
	bar  *progressbar.ProgressBar
	done atomic.Int64
}

func newProgress(w io.Writer, show bool, total int64) *progress {
	p := &progress{}
	if show && w != nil {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription("converting"),
			progressbar.OptionThrottle(100_000_000),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) add(n int64) {
	p.done.Add(n)
	if p.bar != nil {
		p.bar.Add64(n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
