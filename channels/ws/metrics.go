package ws

import "github.com/prometheus/client_golang/prometheus"

// limitHitsHelp is shared by every frontdesk_limit_hits_total series (the
// webhook has its own): a registry merges them into one family only if the
// help strings match.
const limitHitsHelp = "Requests refused by a limit, by limit: max_clients (WebSocket closed with 1013), frame_rate (WebSocket frame answered rate_limited), webhook_rate (POST /api/messages answered 429)."

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
		maxClients: prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdesk_limit_hits_total", Help: limitHitsHelp,
			ConstLabels: prometheus.Labels{"limit": "max_clients"}}),
		frameRate: prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdesk_limit_hits_total", Help: limitHitsHelp,
			ConstLabels: prometheus.Labels{"limit": "frame_rate"}}),
	}
}

// Collectors returns the channel's metrics for a Prometheus registry.
func (h *Handler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{h.metrics.fanoutLag, h.metrics.maxClients, h.metrics.frameRate}
}
