package web

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// sessionCollector reports the session's state, asking the hub once per scrape.
type sessionCollector struct {
	s                       Session
	subs, lastSeq, busy, up *prometheus.Desc
	storageOK               *prometheus.Desc
	turns, resets, slow     *prometheus.Desc
	rejected                *prometheus.Desc
}

func newSessionCollector(s Session) *sessionCollector {
	return &sessionCollector{
		s:       s,
		subs:    prometheus.NewDesc("frontdesk_subscribers", "Clients subscribed to the session stream.", nil, nil),
		lastSeq: prometheus.NewDesc("frontdesk_last_seq", "Sequence number of the newest event.", nil, nil),
		busy:    prometheus.NewDesc("frontdesk_busy", "1 while a turn is running.", nil, nil),
		up:      prometheus.NewDesc("frontdesk_session_up", "1 while the session hub answers.", nil, nil),
		storageOK: prometheus.NewDesc("frontdesk_storage_ok", "1 while the session's writes succeed; 0 from a failed write of the chat log "+
			"or a memory file until that part is written again (/healthz says what failed).", nil, nil),
		turns:    prometheus.NewDesc("frontdesk_turns_total", "Turns ended, by turn_end status.", []string{"status"}, nil),
		resets:   prometheus.NewDesc("frontdesk_resets_total", "Resets, by reason.", []string{"reason"}, nil),
		slow:     prometheus.NewDesc("frontdesk_slow_consumers_dropped_total", "Clients dropped for falling too far behind.", nil, nil),
		rejected: prometheus.NewDesc("frontdesk_inputs_rejected_busy_total", "Inputs answered busy (busy_policy reject).", nil, nil),
	}
}

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.subs
	ch <- c.lastSeq
	ch <- c.busy
	ch <- c.up
	ch <- c.storageOK
	ch <- c.turns
	ch <- c.resets
	ch <- c.slow
	ch <- c.rejected
}

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	info, err := c.s.Info(context.Background())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	busy := 0.0
	if info.Busy {
		busy = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.subs, prometheus.GaugeValue, float64(info.Subscribers))
	ch <- prometheus.MustNewConstMetric(c.lastSeq, prometheus.GaugeValue, float64(info.LastSeq))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, busy)
	storageOK := 1.0
	if info.Storage != "" {
		storageOK = 0
	}
	ch <- prometheus.MustNewConstMetric(c.storageOK, prometheus.GaugeValue, storageOK)
	for status, n := range info.Counters.Turns {
		ch <- prometheus.MustNewConstMetric(c.turns, prometheus.CounterValue, float64(n), status)
	}
	for reason, n := range info.Counters.Resets {
		ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(n), reason)
	}
	ch <- prometheus.MustNewConstMetric(c.slow, prometheus.CounterValue, float64(info.Counters.SlowConsumers))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(info.Counters.Rejected))
}
