package quant

// ggml's scale searches (ggml-quants.c, "Helper functions"), transcribed
// operation for operation: the same float32 operations in the same order,
// the same integer types for the levels (their wrap-around included), so
// the block codecs choose the scales llama.cpp chooses. Each product that
// is then summed is wrapped in float32() to keep it unfused (ggml_float.go).

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it counts as all zero.
const groupMaxEps = 1e-15

// makeQxQuants is make_qx_quants: a symmetric scale for levels in
// [−nmax, nmax−1] (stored as level+nmax in l), refined by a least-squares
// fit weighted by qw, or by x² when qw is nil (rmseType 1, the only type
// the codecs here use).
func makeQxQuants(n, nmax int, x []float32, l []int8, qw []float32) float32 {
	var max, amax float32
	for i := 0; i < n; i++ {
		ax := abs32(x[i])
		if ax > amax {
			amax = ax
			max = x[i]
		}
	}
	if amax < groupMaxEps {
		for i := 0; i < n; i++ {
			l[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	// The weights, computed once (the C recomputes the same x² each pass).
	var wbuf [32]float32
	ws := wbuf[:n]
	if qw != nil {
		ws = qw[:n]
	} else {
		for i := 0; i < n; i++ {
			ws[i] = float32(x[i] * x[i])
		}
	}
	lo, hi := int32(-nmax), int32(nmax-1)
	clampL := func(v int32) int32 { return max32(lo, min32(hi, v)) }
	iscale := -fnmax / max
	var sumlx, suml2 float32
	for i := 0; i < n; i++ {
		li := clampL(nearestInt(float32(iscale * x[i])))
		l[i] = int8(li + int32(nmax))
		w := ws[i]
		fl := float32(li)
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / max
		sumlx, suml2 = 0, 0
		for i := 0; i < n; i++ {
			fl := float32(clampL(nearestInt(float32(iscale * x[i]))))
			w := ws[i]
			sumlx += float32(float32(w*x[i]) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i := 0; i < n; i++ {
				l[i] = int8(int32(nmax) + clampL(nearestInt(float32(iscale*x[i]))))
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQkxQuants is make_qkx2_quants (qkx3 false) and make_qkx3_quants
// (qkx3 true): an asymmetric scale and min for levels in [0, nmax], the
// min kept ≤ 0, searched over nstep+1 trial scales for the least weighted
// squared error. It returns the scale and −min. The two C functions differ
// only in their flat-group test (max == min against max ≤ min); weights
// are never nil for the callers here. laux is scratch of n levels.
func makeQkxQuants(n, nmax int, x, weights []float32, l []uint8, laux []uint8,
	rmin, rdelta float32, nstep int, qkx3 bool) (scale, negMin float32) {
	min, max := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < min {
			min = x[i]
		}
		if x[i] > max {
			max = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if min > 0 {
		min = 0
	}
	if (!qkx3 && max == min) || (qkx3 && max <= min) {
		for i := 0; i < n; i++ {
			l[i] = 0
		}
		return 0, -min
	}
	fnmax := float32(nmax)
	top := int32(nmax)
	iscale := fnmax / float32(max-min)
	scale = 1 / iscale
	var bestErr float32
	for i := 0; i < n; i++ {
		l[i] = uint8(max32(0, min32(top, nearestInt(float32(iscale*float32(x[i]-min))))))
		diff := float32(float32(scale*float32(l[i]))+min) - x[i]
		diff = float32(diff * diff)
		bestErr += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -min
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(float32(rmin+float32(rdelta*float32(is)))+fnmax) / float32(max-min)
		var sumL, sumL2, sumXL float32
		for i := 0; i < n; i++ {
			// min is the best so far: the C reads it after each update.
			li := max32(0, min32(top, nearestInt(float32(iscale*float32(x[i]-min)))))
			laux[i] = uint8(li)
			w := weights[i]
			fl := float32(li)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		d := float32(sumW*sumL2) - float32(sumL*sumL)
		if d > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / d
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / d
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var cur float32
			for i := 0; i < n; i++ {
				diff := float32(float32(thisScale*float32(laux[i]))+thisMin) - x[i]
				diff = float32(diff * diff)
				cur += float32(weights[i] * diff)
			}
			if cur < bestErr {
				copy(l[:n], laux[:n])
				bestErr = cur
				scale = thisScale
				min = thisMin
			}
		}
	}
	return scale, -min
}

// makeQpQuants is make_qp_quants: levels in [0, nmax] (held in uint8, as
// ggml holds them, wrap-around included) for non-negative values x (the
// eight sub-block scales or mins of a K super-block), weighted by qw, with
// a trial-scale search and five rounds of coordinate descent.
func makeQpQuants(n, nmax int, x []float32, l []uint8, qw []float32) float32 {
	var max float32
	for i := 0; i < n; i++ {
		max = maxf32(max, x[i])
	}
	if max < groupMaxEps {
		for i := 0; i < n; i++ {
			l[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := fnmax / max
	for i := 0; i < n; i++ {
		l[i] = uint8(nearestInt(float32(iscale * x[i])))
	}
	scale := 1 / iscale
	var bestMSE float32
	for i := 0; i < n; i++ {
		diff := x[i] - float32(scale*float32(l[i]))
		bestMSE += float32(float32(qw[i]*diff) * diff)
	}
	for is := -4; is <= 4; is++ {
		if is == 0 {
			continue
		}
		iscaleIs := float32(float32(0.1*float32(is))+fnmax) / max
		scaleIs := 1 / iscaleIs
		var mse float32
		for i := 0; i < n; i++ {
			li := min32(int32(nmax), nearestInt(float32(iscaleIs*x[i])))
			diff := x[i] - float32(scaleIs*float32(li))
			mse += float32(float32(qw[i]*diff) * diff)
		}
		if mse < bestMSE {
			bestMSE = mse
			iscale = iscaleIs
		}
	}
	var sumlx, suml2 float32
	for i := 0; i < n; i++ {
		li := min32(int32(nmax), nearestInt(float32(iscale*x[i])))
		l[i] = uint8(li)
		w := qw[i]
		fl := float32(l[i])
		sumlx += float32(float32(w*x[i]) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for try := 0; try < 5; try++ {
		changed := 0
		for i := 0; i < n; i++ {
			w := qw[i]
			fl := float32(l[i])
			slx := sumlx - float32(float32(w*x[i])*fl)
			sl2 := suml2 - float32(float32(w*fl)*fl)
			if slx > 0 && sl2 > 0 {
				newL := min32(int32(nmax), nearestInt(float32(x[i]*sl2)/slx))
				if newL != int32(l[i]) {
					fn := float32(newL)
					slx += float32(float32(w*x[i]) * fn)
					sl2 += float32(float32(w*fn) * fn)
					if float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						l[i] = uint8(newL)
						sumlx = slx
						suml2 = sl2
						changed++
					}
				}
			}
		}
		if changed == 0 {
			break
		}
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

func min32(a, b int32) int32 {
	if a < b {
		return a
	}
	return b
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}

// maxf32 is ggml's MAX(a, b) macro, ((a) > (b) ? (a) : (b)), which differs
// from Go's max for NaN and signed zeros.
func maxf32(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}
