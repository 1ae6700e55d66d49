package index

import (
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

func randomUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var s float64
	for i := range v {
		v[i] = float32(rng.NormFloat64())
		s += float64(v[i]) * float64(v[i])
	}
	k := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= k
	}
	return v
}

// TestQuantizeCosine: the cosine of two int8 vectors is within 0.01 of
// float32's, for unrelated and for close pairs.
func TestQuantizeCosine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for range 2000 {
		a := randomUnit(rng, 256)
		b := randomUnit(rng, 256)
		if rng.IntN(2) == 0 { // a close pair
			for i := range b {
				b[i] = a[i] + 0.3*b[i]
			}
		}
		var n float32
		for _, x := range b {
			n += x * x
		}
		for i := range b {
			b[i] /= float32(math.Sqrt(float64(n)))
		}
		qa, sa := quantize(a)
		qb, sb := quantize(b)
		worst = max(worst, math.Abs(float64(dotFloat32(a, b))-float64(float32(dotInt8(widen(qa), qb))*sa*sb)))
	}
	if worst > 0.01 {
		t.Errorf("int8 cosine differs from float32's by up to %.4f, want ≤ 0.01", worst)
	}
	t.Logf("largest int8 cosine error %.4f", worst)
	q, s := quantize(randomUnit(rng, 300))
	back, s2, err := decodeVec(encodeVec(q, s))
	if err != nil || s2 != s || !slices.Equal(back, q) {
		t.Errorf("a vector does not survive its blob: %v", err)
	}
}

// BenchmarkVectorSearch times the brute-force nearest-20 scan over 100,000
// vectors, int8 (as stored) against float32, at 256 dimensions (the
// stand-in's) and 768 (nomic-embed-text's), and reports the bytes a
// vector takes in memory. Goal: p99 ≤ 30 ms at 100k.
func BenchmarkVectorSearch(b *testing.B) {
	const n = 100_000
	for _, dim := range []int{256, 768} {
		rng := rand.New(rand.NewPCG(3, uint64(dim)))
		var s vecStore
		f32 := make([]float32, 0, n*dim)
		for i := range n {
			v := randomUnit(rng, dim)
			q, sc := quantize(v)
			s.add([]int64{int64(i + 1)}, []int64{int64(i)}, []uint8{kindUser}, [][]int8{q}, []float32{sc})
			f32 = append(f32, v...)
		}
		queries := make([][]float32, 50)
		for i := range queries {
			queries[i] = randomUnit(rng, dim)
		}
		formats := []struct {
			name   string
			bytes  int
			search func(q []float32)
		}{
			{"int8", dim + 4 + 8 + 8 + 1, func(q []float32) { s.search(q, vecScan, vecFilter{kind: -1}) }},
			{"float32", 4*dim + 8 + 8 + 1, func(q []float32) { searchFloat32(f32, dim, q, vecScan) }},
		}
		for _, f := range formats {
			b.Run(f.name+"-dim"+itoa(dim), func(b *testing.B) {
				i := 0
				for b.Loop() {
					f.search(queries[i%len(queries)])
					i++
				}
				ds := make([]time.Duration, 100)
				cpu0 := cpuTimeInternal()
				for i := range ds {
					t := time.Now()
					f.search(queries[i%len(queries)])
					ds[i] = time.Since(t)
				}
				b.ReportMetric(float64(cpuTimeInternal()-cpu0)/float64(len(ds))/1e6, "cpu-ms/search")
				slices.Sort(ds)
				b.ReportMetric(float64(ds[50])/1e6, "p50-ms")
				b.ReportMetric(float64(ds[99])/1e6, "p99-ms")
				b.ReportMetric(float64(f.bytes*n)/1e6, "MB/100k")
			})
		}
	}
}

// searchFloat32 is the float32 scan BenchmarkVectorSearch compares with.
func searchFloat32(data []float32, dim int, q []float32, k int) []scored {
	h := make(minHeap, 0, k+1)
	for i := 0; i*dim < len(data); i++ {
		sim := dotFloat32(q, data[i*dim:(i+1)*dim])
		if len(h) < k {
			h = append(h, scored{int64(i), sim})
			if len(h) == k {
				slices.SortFunc(h, func(a, b scored) int { return cmpF(a.sim, b.sim) })
			}
		} else if sim > h[0].sim {
			h[0] = scored{int64(i), sim}
			slices.SortFunc(h, func(a, b scored) int { return cmpF(a.sim, b.sim) })
		}
	}
	return h
}

func cmpF(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cpuTimeInternal is the process's user and system CPU time so far.
func cpuTimeInternal() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func itoa(i int) string {
	return string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}
