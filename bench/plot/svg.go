package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// style is how one series is drawn.
type style struct {
	key, label, color, dash string
}

var styles = []style{
	{"roofline", "roofline: probe GB/s ÷ B/token", "#888888", "6,4"},
	{"cflowc", "cflowc", "#1f77b4", ""},
	{"llama.cpp", "llama.cpp", "#d62728", ""},
}

// svg draws the series as lines over the thread counts, each point
// labelled with its value.
func svg(s summary, title string) string {
	const W, H = 640.0, 420.0
	const left, right, top, bottom = 70.0, 240.0, 50.0, 60.0
	pw, ph := W-left-right, H-top-bottom
	ymax := 0.0
	for _, st := range styles {
		for _, v := range s.series[st.key] {
			ymax = math.Max(ymax, v)
		}
	}
	step := 10.0
	ymax = math.Ceil(ymax*1.1/step) * step
	x := func(i int) float64 {
		if len(s.threads) == 1 {
			return left + pw/2
		}
		return left + pw*(0.12+0.76*float64(i)/float64(len(s.threads)-1))
	}
	y := func(v float64) float64 { return top + ph*(1-v/ymax) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="25" font-size="14" text-anchor="middle">%s</text>`+"\n", left+pw/2, html.EscapeString(title))
	for v := 0.0; v <= ymax; v += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, y(v), left+pw, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-6, y(v)+4, v)
	}
	for i, t := range s.threads {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(i), top+ph+18, t)
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">threads</text>`+"\n", left+pw/2, H-15)
	fmt.Fprintf(&b, `<text transform="translate(20 %.1f) rotate(-90)" text-anchor="middle">decode tok/s (median over rounds)</text>`+"\n", top+ph/2)
	for k, st := range styles {
		vs := s.series[st.key]
		var pts []string
		for i, t := range s.threads {
			if v, ok := vs[t]; ok {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
			}
		}
		dash := ""
		if st.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), st.color, dash)
		for i, t := range s.threads {
			if v, ok := vs[t]; ok {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x(i), y(v), st.color)
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%.1f</text>`+"\n", x(i), y(v)-8, st.color, v)
			}
		}
		ly := top + 10 + 22*float64(k)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", left+pw+15, ly, left+pw+40, ly, st.color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+45, ly+4, st.label)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
