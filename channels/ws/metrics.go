package ws

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/internal/limithits"
)

// metrics are the channel's Prometheus series. Their types are safe for
// concurrent use: every connection's goroutines observe them directly.
type metrics struct {
	fanoutLag  prometheus.Histogram
	maxClients prometheus.Counter
	frameRate  prometheus.Counter
}

func newMetrics() metrics {
	return metrics{
		fanoutLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "frontdesk_fanout_lag_seconds",
			Help:    "From an event's publication in the hub to its frame written to a WebSocket client, per client and frame (replay excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}),
		maxClients: limithits.Counter("max_clients"),
		frameRate:  limithits.Counter("frame_rate"),
	}
}

// Collectors returns the channel's metrics for a Prometheus registry.
func (h *Handler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{h.metrics.fanoutLag, h.metrics.maxClients, h.metrics.frameRate}
}
