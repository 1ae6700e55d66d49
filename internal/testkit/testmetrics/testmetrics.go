// Package testmetrics reads Prometheus text exposition for tests: scrape
// collectors through promhttp, then look a series up by name and labels.
// It is imported only by tests.
package testmetrics

import (
	"bufio"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Scrape registers cs in a fresh registry and returns the /metrics text.
func Scrape(t testing.TB, cs ...prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}).
		ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Value returns the value of the series named exactly series — the name
// followed by its labels as exposed, e.g.
// `frontdesk_limit_hits_total{limit="max_clients"}` — and whether the text
// has it.
func Value(text, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// Must is Value that fails the test when the series is missing.
func Must(t testing.TB, text, series string) float64 {
	t.Helper()
	v, ok := Value(text, series)
	if !ok {
		t.Fatalf("no series %s in the metrics:\n%s", series, text)
	}
	return v
}
