package hub

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/event"
)

// metrics are the hub's Prometheus series. They are observed where the
// thing happens — on the hub's goroutine for turns and the chat log, on
// the caller's for searches — and never waited on: prometheus types are
// safe for concurrent use and an observation is a few atomic adds.
type metrics struct {
	turnDuration  *prometheus.HistogramVec // by turn_end status
	firstToken    prometheus.Histogram
	appendLog     prometheus.Histogram
	storageErrors *prometheus.CounterVec // by op
	search        *prometheus.HistogramVec
	waiting       prometheus.Gauge // inputs recorded as queued, not yet started
}

// Search callers, the label of frontdesk_search_duration_seconds.
const (
	searchByClient = "client" // Search: the API, the REPL, the UI
	searchByTool   = "tool"   // the agent's history_search
)

func newMetrics() metrics {
	m := metrics{
		turnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "frontdesk_turn_duration_seconds",
			Help:    "From a turn's start (its input logged and echoed) to its turn_end, by status.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}, []string{"status"}),
		firstToken: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "frontdesk_turn_first_token_seconds",
			Help:    "From a turn's start to its first streamed delta.",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2, 5, 10, 20, 60},
		}),
		appendLog: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "frontdesk_chat_log_append_duration_seconds",
			Help:    "Appending one event to the chat log, fsync included (session.fsync: always).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		storageErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdesk_storage_errors_total",
			Help: "Chat log failures, by op: append (an event not recorded; an input is then refused) or sync.",
		}, []string{"op"}),
		search: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "frontdesk_search_duration_seconds",
			Help:    "Full-text searches, by caller: client (API, REPL, UI) or tool (the agent's history_search).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"caller"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "frontdesk_inputs_waiting",
			Help: "Inputs recorded as queued (email, schedules, busy_policy queue) that have not started yet.",
		}),
	}
	// Series that exist from the start, so dashboards and alerts see 0
	// rather than nothing.
	for _, s := range []string{event.StatusCompleted, event.StatusCancelled, event.StatusError, event.StatusInterrupted} {
		m.turnDuration.WithLabelValues(s)
	}
	m.storageErrors.WithLabelValues("append")
	m.storageErrors.WithLabelValues("sync")
	m.search.WithLabelValues(searchByClient)
	m.search.WithLabelValues(searchByTool)
	return m
}

// Collectors returns the hub's metrics for a Prometheus registry. The
// session's state and counters (frontdesk_turns_total …) are built from
// Info by package web.
func (m *SessionManager) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.metrics.turnDuration, m.metrics.firstToken, m.metrics.appendLog,
		m.metrics.storageErrors, m.metrics.search, m.metrics.waiting}
}

// appendLog appends e to the chat log, timed and counted. Hub only.
func (m *SessionManager) appendLog(e event.Event) error {
	t0 := time.Now()
	err := m.log.Append(e)
	m.metrics.appendLog.Observe(time.Since(t0).Seconds())
	if err != nil && !clusterFault(err) {
		m.metrics.storageErrors.WithLabelValues("append").Inc()
	}
	return err
}
