package generate

import "testing"

// TestStopText: stop strings found across token boundaries, never emitted
// (not even a first half), and split UTF-8 held until whole.
func TestStopText(t *testing.T) {
	for _, c := range []struct {
		stops  []string
		pieces []string
		want   []string // released per piece
		hit    int      // index of the piece that hits, −1 none
		tail   string   // flush after the last piece when no hit
	}{
		{[]string{"o W"}, []string{"Hel", "lo W", "orld"}, []string{"Hel", "l"}, 1, ""},
		{[]string{"</s>"}, []string{"a<", "/", "s", "x"}, []string{"a", "", "", "</sx"}, -1, ""},
		{[]string{"</s>"}, []string{"a<", "/", "s"}, []string{"a", "", ""}, -1, "</s"},
		{[]string{"xyz", "b"}, []string{"aab", "xyz"}, []string{"aa"}, 0, ""},
		{[]string{"ab", "b"}, []string{"xab"}, []string{"x"}, 0, ""},
		{nil, []string{"\xc3", "\xa9t\xe2\x82", "\xac"}, []string{"", "ét", "€"}, -1, ""},
		{nil, []string{"\xff\xc3"}, []string{"\xff"}, -1, "\xc3"},
	} {
		st := &stopText{}
		for _, s := range c.stops {
			st.stops = append(st.stops, []byte(s))
		}
		for i, p := range c.pieces {
			out, hit := st.add([]byte(p))
			if i >= len(c.want) {
				t.Fatalf("%q: piece %d after the stop", c.pieces, i)
			}
			if string(out) != c.want[i] || hit != (i == c.hit) {
				t.Fatalf("%q stops %q: piece %d released %q hit %v, want %q hit %v", c.pieces, c.stops, i, out, hit, c.want[i], i == c.hit)
			}
			if hit {
				break
			}
		}
		if c.hit < 0 {
			if got := string(st.flush()); got != c.tail {
				t.Fatalf("%q: flush %q, want %q", c.pieces, got, c.tail)
			}
		}
	}
}
