package datadir

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdesk-hq/frontdesk/index"
)

var (
	descSemanticUp = prometheus.NewDesc("frontdesk_search_semantic_up",
		"1 while search by meaning works; 0 while the embeddings server fails (searches answer from keywords) "+
			"or after search by meaning stopped (/healthz says why). Absent without search.embeddings.", nil, nil)
	descDimChanges = prometheus.NewDesc("frontdesk_search_embedding_dimension_changes_total",
		"Times the embeddings server answered in another dimension than the stored vectors (each re-embeds everything; "+
			"three in a row stop search by meaning).", nil, nil)
)

// semanticCollector reports how search by meaning fares.
type semanticCollector struct{ f *index.Follower }

// SemanticCollector reports search by meaning's state for /metrics; its
// metrics are absent when no embeddings server is configured.
func SemanticCollector(f *index.Follower) prometheus.Collector { return semanticCollector{f} }

func (c semanticCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSemanticUp
	ch <- descDimChanges
}

func (c semanticCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.f.SemanticStatus()
	if !st.Configured {
		return
	}
	up := 0.0
	if st.State == index.SemanticOK {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descSemanticUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(descDimChanges, prometheus.CounterValue, float64(st.DimChanges))
}

// SemanticWarning is /healthz's reason while search by meaning does not
// work ("" while it does, or without embeddings).
func SemanticWarning(f *index.Follower) string {
	if f == nil {
		return ""
	}
	st := f.SemanticStatus()
	if !st.Configured || st.State == index.SemanticOK {
		return ""
	}
	return "search by meaning " + st.State + ": " + st.Reason
}
