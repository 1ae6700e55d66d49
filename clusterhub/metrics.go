package clusterhub

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a cluster node's series for /metrics.
type Metrics struct {
	leaseChanges *prometheus.CounterVec
	appendAck    prometheus.Histogram
	delivery     prometheus.Histogram
}

// NewMetrics makes a node's metrics; register Collectors.
func NewMetrics() *Metrics {
	return &Metrics{
		leaseChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frontdesk_cluster_lease_changes_total",
			Help: "Changes of this node's role in the cluster, by the role it took (leader, follower, electing).",
		}, []string{"role"}),
		appendAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "frontdesk_cluster_append_ack_seconds",
			Help:    "From an append to the log stream to its acknowledgement by a majority (the holder only).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 3},
		}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "frontdesk_cluster_delivery_seconds",
			Help: "On a follower: from an event's time on the holder to this node having it " +
				"(in its copy of the log and handed to its clients); includes the clocks' difference between machines.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
}

// Collectors returns the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.leaseChanges, m.appendAck, m.delivery}
}

func (m *Metrics) role(r string) {
	if m != nil {
		m.leaseChanges.WithLabelValues(r).Inc()
	}
}

func (m *Metrics) acked(since time.Time) {
	if m != nil {
		m.appendAck.Observe(time.Since(since).Seconds())
	}
}

func (m *Metrics) delivered(ts time.Time) {
	if m != nil && !ts.IsZero() {
		m.delivery.Observe(max(0, time.Since(ts).Seconds()))
	}
}
