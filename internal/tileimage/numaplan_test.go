package tileimage

import (
	"reflect"
	"testing"
)

func TestShardCuts(t *testing.T) {
	for _, c := range []struct {
		total, unit, n int
		want           []int
	}{
		{8, 1, 3, []int{0, 3, 6, 8}},      // 8 experts on 3 nodes: 3, 3, 2
		{1, 1, 2, []int{0, 1, 1}},         // fewer items than nodes
		{300, 128, 2, []int{0, 256, 300}}, // 3 stripes: 2 + 1, cut on a stripe
		{96, 32, 3, []int{0, 32, 64, 96}},
	} {
		if got := ShardCuts(c.total, c.unit, c.n); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ShardCuts(%d,%d,%d) = %v, want %v", c.total, c.unit, c.n, got, c.want)
		}
	}
}
