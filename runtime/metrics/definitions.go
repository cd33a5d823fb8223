package metrics

import "github.com/prometheus/client_golang/prometheus"

// definitionsMetrics count the definitions versions a server switched to and refused (docs/issue-25.md).
type definitionsMetrics struct {
	switches prometheus.Counter
	refused  prometheus.Counter
	served   *prometheus.GaugeVec
}

func newDefinitionsMetrics(reg *prometheus.Registry) definitionsMetrics {
	d := definitionsMetrics{
		switches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "definitions", Name: "switches_total",
			Help: "Definitions versions this server switched to while serving.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "definitions", Name: "refused_total",
			Help: "Definitions versions this server refused to serve (it went on serving the previous one; GET /readyz says why).",
		}),
		served: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "definitions", Name: "version_info",
			Help: "1 for the definitions version this server serves (label version: the first 12 hex digits of its SHA-256).",
		}, []string{"version"}),
	}
	reg.MustRegister(d.switches, d.refused, d.served)
	return d
}

// DefinitionsServed notes the version served at start.
func (m *Metrics) DefinitionsServed(version string) {
	if m == nil {
		return
	}
	m.defs.served.Reset()
	m.defs.served.WithLabelValues(version).Set(1)
}

// DefinitionsSwitched counts a switch to version.
func (m *Metrics) DefinitionsSwitched(version string) {
	if m == nil {
		return
	}
	m.defs.switches.Inc()
	m.DefinitionsServed(version)
}

// DefinitionsRefused counts a version refused.
func (m *Metrics) DefinitionsRefused() {
	if m == nil {
		return
	}
	m.defs.refused.Inc()
}
