// Package metrics holds the Prometheus series recordsd exposes on --metrics-addr. Every label takes its
// values from a bounded set: resources and operations come from the definitions, statuses from HTTP, plugin
// names and hooks from the definitions; never a record id, a key, a workspace or a raw path. A nil
// *Metrics records nothing, so code paths need no checks of their own.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every series of the server.
const Namespace = "records"

// Metrics is the server's set of series, on its own registry.
type Metrics struct {
	reg  *prometheus.Registry
	defs definitionsMetrics

	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	responseBytes *prometheus.HistogramVec
	inFlight      prometheus.Gauge
	rateLimited   prometheus.Counter
	quotaRefused  prometheus.Counter
	replays       *prometheus.CounterVec
	pluginCalls   *prometheus.CounterVec
	pluginTime    *prometheus.HistogramVec
	pluginStarts  *prometheus.CounterVec
	pluginSwaps   *prometheus.CounterVec
	pluginInfo    *prometheus.GaugeVec
	events        prometheus.Counter
	deliveries    *prometheus.CounterVec
	deliveryLag   prometheus.Histogram
}

// New makes the series and registers them, with the Go runtime and process collectors, on a registry
// of their own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests answered, by resource (\"-\" outside a resource), operation and status code.",
	}, []string{"resource", "operation", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time from a request's arrival to its answer, by resource and operation.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"resource", "operation"})
	m.responseBytes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "http", Name: "response_bytes",
		Help:    "Size of response bodies, by operation.",
		Buckets: prometheus.ExponentialBuckets(256, 4, 8),
	}, []string{"operation"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "http", Name: "requests_in_flight",
		Help: "Requests being served now.",
	})
	m.rateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "rate_limited_total",
		Help: "Requests refused with 429 rate_limited (a key's or the workspace's window was spent).",
	})
	m.quotaRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "quota_exceeded_total",
		Help: "Requests refused with 429 quota_exceeded.",
	})
	m.replays = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "idempotent_replays_total",
		Help: "Writes answered from a stored Idempotency-Key response instead of running again, by resource.",
	}, []string{"resource"})
	m.pluginCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "calls_total",
		Help: "Plugin hook calls by plugin, hook (before, after) and outcome (ok, error, unavailable).",
	}, []string{"plugin", "hook", "outcome"})
	m.pluginTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "call_duration_seconds",
		Help:    "Time of plugin hook calls, by plugin and hook.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"plugin", "hook"})
	m.pluginStarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "starts_total",
		Help: "Plugin process starts by plugin and reason (start, restart).",
	}, []string{"plugin", "reason"})
	m.pluginSwaps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "swaps_total",
		Help: "Plugin programs replaced on disk, by plugin and result (swapped: the new program serves; refused: it failed to start, to answer or to match, and the old one serves on).",
	}, []string{"plugin", "result"})
	m.pluginInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "plugin", Name: "info",
		Help: "1 for the program each plugin's process runs: its version and SHA-256 (one series per plugin).",
	}, []string{"plugin", "version", "sha256"})
	m.events = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "events", Name: "numbered_total",
		Help: "Events of the change feed numbered by this server (each committed write's events are numbered once, by one server).",
	})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "webhooks", Name: "attempts_total",
		Help: "Webhook delivery attempts by outcome (delivered, http_error, timeout, refused_address, dns, connect, tls, invalid_url, signing).",
	}, []string{"outcome"})
	m.deliveryLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "webhooks", Name: "delivery_lag_seconds",
		Help:    "Time from a write's commit to its event's successful delivery to an endpoint.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400},
	})
	m.defs = newDefinitionsMetrics(m.reg)
	m.reg.MustRegister(m.requests, m.duration, m.responseBytes, m.inFlight, m.rateLimited, m.quotaRefused, m.replays,
		m.pluginCalls, m.pluginTime, m.pluginStarts, m.pluginSwaps, m.pluginInfo, m.events, m.deliveries, m.deliveryLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the exposition format of m's registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// Register adds collectors (such as the database pool's) to m's registry.
func (m *Metrics) Register(cs ...prometheus.Collector) {
	if m != nil {
		m.reg.MustRegister(cs...)
	}
}

// Registry returns m's registry, for tests that gather it directly.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestStarted counts a request in flight; call the returned function when it is answered.
func (m *Metrics) RequestStarted() func() {
	if m == nil {
		return func() {}
	}
	m.inFlight.Inc()
	return m.inFlight.Dec
}

// Request records one answered request. resource is "-" for routes outside a resource.
func (m *Metrics) Request(resource, operation string, status int, d time.Duration, bytes int64) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(resource, operation, statusLabel(status)).Inc()
	m.duration.WithLabelValues(resource, operation).Observe(d.Seconds())
	m.responseBytes.WithLabelValues(operation).Observe(float64(bytes))
}

// statusLabel spells the common codes without allocating.
func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 201:
		return "201"
	case 204:
		return "204"
	case 400:
		return "400"
	case 401:
		return "401"
	case 403:
		return "403"
	case 404:
		return "404"
	case 422:
		return "422"
	case 429:
		return "429"
	case 503:
		return "503"
	}
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// RateLimited counts a 429 rate_limited answer.
func (m *Metrics) RateLimited() {
	if m != nil {
		m.rateLimited.Inc()
	}
}

// QuotaExceeded counts a 429 quota_exceeded answer.
func (m *Metrics) QuotaExceeded() {
	if m != nil {
		m.quotaRefused.Inc()
	}
}

// Replay counts a write answered from its stored idempotent response.
func (m *Metrics) Replay(resource string) {
	if m != nil {
		m.replays.WithLabelValues(resource).Inc()
	}
}

// Plugin outcomes.
const (
	OutcomeOK          = "ok"
	OutcomeError       = "error"       // the hook ran and failed (an After hook's error)
	OutcomeUnavailable = "unavailable" // the plugin was down, crashed or missed its deadline
	OutcomeSkipped     = "skipped"     // an After hook not run: as many as plugin_after_limit were running
)

// PluginCall records one hook call of plugin.
func (m *Metrics) PluginCall(plugin, hook, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.pluginCalls.WithLabelValues(plugin, hook, outcome).Inc()
	m.pluginTime.WithLabelValues(plugin, hook).Observe(d.Seconds())
}

// PluginStarted counts a plugin process start; restart tells a start after an exit or a crash.
func (m *Metrics) PluginStarted(plugin string, restart bool) {
	if m == nil {
		return
	}
	reason := "start"
	if restart {
		reason = "restart"
	}
	m.pluginStarts.WithLabelValues(plugin, reason).Inc()
}

// Swap results.
const (
	SwapSwapped = "swapped"
	SwapRefused = "refused"
)

// PluginSwap counts a changed program of plugin: SwapSwapped or SwapRefused.
func (m *Metrics) PluginSwap(plugin, result string) {
	if m != nil {
		m.pluginSwaps.WithLabelValues(plugin, result).Inc()
	}
}

// PluginServing records that plugin's process runs version, from the program of SHA-256 sum, in place
// of whatever it ran before.
func (m *Metrics) PluginServing(plugin, version, sum string) {
	if m == nil {
		return
	}
	m.pluginInfo.DeletePartialMatch(prometheus.Labels{"plugin": plugin})
	m.pluginInfo.WithLabelValues(plugin, version, sum).Set(1)
}

// Pool is a snapshot of a database connection pool.
type Pool struct {
	Acquired, Idle, Total, Max int64
	// Acquires counts connections handed out; EmptyAcquires those that had to wait for one;
	// AcquireWait is the total time spent waiting.
	Acquires, EmptyAcquires int64
	AcquireWait             time.Duration
}

// PoolCollector exposes the pool snapshots stats returns as records_db_pool_* series.
func PoolCollector(stats func() Pool) prometheus.Collector { return poolCollector{stats} }

type poolCollector struct{ stats func() Pool }

var (
	poolConns = prometheus.NewDesc(Namespace+"_db_pool_connections", "Database connections by state (acquired, idle, total).", []string{"state"}, nil)
	poolMax   = prometheus.NewDesc(Namespace+"_db_pool_max_connections", "Most connections the pool opens.", nil, nil)
	poolAcq   = prometheus.NewDesc(Namespace+"_db_pool_acquires_total", "Connections handed out by the pool.", nil, nil)
	poolEmpty = prometheus.NewDesc(Namespace+"_db_pool_empty_acquires_total", "Acquires that waited because no connection was free.", nil, nil)
	poolWait  = prometheus.NewDesc(Namespace+"_db_pool_acquire_wait_seconds_total", "Time spent waiting for a free connection.", nil, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConns
	ch <- poolMax
	ch <- poolAcq
	ch <- poolEmpty
	ch <- poolWait
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.Acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.Total), "total")
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.Max))
	ch <- prometheus.MustNewConstMetric(poolAcq, prometheus.CounterValue, float64(s.Acquires))
	ch <- prometheus.MustNewConstMetric(poolEmpty, prometheus.CounterValue, float64(s.EmptyAcquires))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, s.AcquireWait.Seconds())
}

// EventsNumbered counts n events of the change feed numbered.
func (m *Metrics) EventsNumbered(n int) {
	if m != nil {
		m.events.Add(float64(n))
	}
}

// WebhookAttempt counts one delivery attempt by outcome; lag (from the event's write to its delivery) is
// observed for delivered ones.
func (m *Metrics) WebhookAttempt(outcome string, delivered bool, lag time.Duration) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(outcome).Inc()
	if delivered {
		m.deliveryLag.Observe(lag.Seconds())
	}
}
