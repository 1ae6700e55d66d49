// Package limithits makes the series of frontdesk_limit_hits_total: one
// counter per limit, all with the same help text, as a Prometheus
// registry merges series into one family only when their help matches.
package limithits

import "github.com/prometheus/client_golang/prometheus"

const help = "Requests refused by a limit, by limit: max_clients (WebSocket closed with 1013), frame_rate (WebSocket frame answered rate_limited), " +
	"webhook_rate (POST /api/messages answered 429), mcp_send_rate (/mcp send_message answered rate_limited)."

// Counter returns the frontdesk_limit_hits_total series for limit.
func Counter(limit string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "frontdesk_limit_hits_total", Help: help,
		ConstLabels: prometheus.Labels{"limit": limit}})
}
