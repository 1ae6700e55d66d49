package email

import "github.com/prometheus/client_golang/prometheus"

// Collector exposes the channel's counters to Prometheus (it reads them
// with Metrics on each scrape) and its receive→answer histogram.
func (c *Channel) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Channel }

var (
	descReceived = prometheus.NewDesc("frontdesk_email_received_total", "Mails fetched and decided on.", nil, nil)
	descAccepted = prometheus.NewDesc("frontdesk_email_accepted_total", "Mails put into the session.", nil, nil)
	descSkipped  = prometheus.NewDesc("frontdesk_email_skipped_total", "Mails marked seen without an answer, by reason.", []string{"reason"}, nil)
	descReplies  = prometheus.NewDesc("frontdesk_email_replies_total", "Replies accepted by the SMTP server (notes included).", nil, nil)
	descNotes    = prometheus.NewDesc("frontdesk_email_notes_total", "Notes sent about a cancelled, failed or lost turn.", nil, nil)
	descSendErr  = prometheus.NewDesc("frontdesk_email_send_errors_total", "Failed SMTP attempts (each retried).", nil, nil)
	descSendFail = prometheus.NewDesc("frontdesk_email_send_failed_total", "Replies given up on (moved to failed/).", nil, nil)
	descIMAPErr  = prometheus.NewDesc("frontdesk_email_imap_errors_total", "IMAP connections that ended in an error.", nil, nil)
	descAuthFail = prometheus.NewDesc("frontdesk_email_auth_failures_total", "Logins the IMAP server rejected.", nil, nil)
	descRescans  = prometheus.NewDesc("frontdesk_email_rescans_total", "UIDVALIDITY changes handled.", nil, nil)
	descUp       = prometheus.NewDesc("frontdesk_email_connected", "1 while an IMAP connection is up.", nil, nil)
	descOutbox   = prometheus.NewDesc("frontdesk_email_outbox_pending", "Replies waiting to be sent.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReceived, descAccepted, descSkipped, descReplies, descNotes,
		descSendErr, descSendFail, descIMAPErr, descAuthFail, descRescans, descUp, descOutbox} {
		ch <- d
	}
	c.c.answered.Describe(ch)
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	m := k.c.Metrics()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(descReceived, m.Received)
	counter(descAccepted, m.Accepted)
	counter(descReplies, m.Replies)
	counter(descNotes, m.Notes)
	counter(descSendErr, m.SendErrors)
	counter(descSendFail, m.SendFailed)
	counter(descIMAPErr, m.IMAPErrors)
	counter(descAuthFail, m.AuthFailures)
	counter(descRescans, m.Rescans)
	for reason, n := range m.Skipped {
		ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(n), reason)
	}
	up := 0.0
	if m.Connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descOutbox, prometheus.GaugeValue, float64(m.OutboxPending))
	k.c.answered.Collect(ch)
}
