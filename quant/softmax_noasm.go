//go:build noasm || !amd64

package quant

// expScoresAVX2 is false without assembly: ExpScores runs in Go.
const expScoresAVX2 = false

func maxScaled256(*float32, int, float32) float32             { panic("quant: no assembly") }
func expShifted256(*float32, int, float32, float32, *float32) { panic("quant: no assembly") }

func siluMul256(*float32, *float32, int) int { panic("quant: no assembly") }
