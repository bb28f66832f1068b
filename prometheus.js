'use strict'
// resilix/prometheus: one Resilix instance's calls and state as prom-client metrics (ADR 0007).
// Names follow Prometheus's conventions: snake_case under `resilix_`, `_total` counters,
// durations in seconds. Calls are counted from the per-call diagnostics channels; the gauges read
// one rx.stats() per scrape. prom-client is an optional peer dependency, required here only.

const { BUCKETS, VERDICTS, REJECT_REASONS, STATES, checkArguments, peer, listen, snapshots, instrumentation } = require('./lib/metrics/common')
const { SERIES } = require('./lib/metrics/policies')

const MODULE = 'resilix/prometheus'

/**
 * Registers resilix's metrics in `options.registry` (default: prom-client's global registry).
 * Returns `{ dispose() }`, which unregisters them and stops counting.
 * @param {import('./index').Resilix} rx
 * @param {import('./prometheus').PrometheusOptions} [options]
 */
function instrument(rx, options) {
  const o = checkArguments(MODULE, rx, options, ['registry', 'buckets'])
  const client = peer(MODULE, 'prom-client')
  const registers = [o.registry ?? client.register]
  const buckets = o.buckets ?? BUCKETS
  const snapshot = snapshots(rx)

  const duration = new client.Histogram({
    name: 'resilix_call_duration_seconds',
    help: 'Calls that ran, from the start of fn (or the permit) to their settle, by key and verdict',
    labelNames: ['key', 'verdict'],
    buckets,
    registers,
  })
  const wait = new client.Histogram({
    name: 'resilix_call_wait_time_seconds',
    help: 'Time calls that ran waited in the queue before they started, by key',
    labelNames: ['key'],
    buckets,
    registers,
  })
  const rejections = new client.Counter({
    name: 'resilix_call_rejections_total',
    help: 'Calls refused by resilix (the upstream was not called), by key and reason',
    labelNames: ['key', 'reason'],
    registers,
  })
  const queueTimeouts = new client.Counter({
    name: 'resilix_queue_timeouts_total',
    help: 'Calls whose deadline passed while they waited in the queue (they never ran), by key',
    labelNames: ['key'],
    registers,
  })
  // Gauges: reset and refilled on every scrape, so an evicted key's series disappear with it.
  const gauge = (name, help, read, labelNames = ['key']) =>
    new client.Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset()
        for (const [key, s] of Object.entries(snapshot())) read(this, key, s)
      },
    })
  const gauges = [
    gauge('resilix_call_limit', 'The concurrency limit in force, by key', (g, key, s) => s.limit !== null && g.set({ key }, s.limit)),
    gauge('resilix_call_active', 'Calls holding a permit, by key', (g, key, s) => g.set({ key }, s.inflight)),
    gauge('resilix_call_queued', 'Calls waiting in the queue, by key', (g, key, s) => g.set({ key }, s.queued)),
    gauge(
      'resilix_breaker_state',
      'The circuit breaker state: 1 for the current state of each key, 0 for the others',
      (g, key, s) => {
        if (s.breaker !== null) for (const state of STATES) g.set({ key, state }, s.breaker === state ? 1 : 0)
      },
      ['key', 'state'],
    ),
  ]
  // Every policy's figures (ADR 1230): counters read from stats() are set, not incremented.
  for (const series of SERIES) {
    const Metric = series.kind === 'counter' ? client.Counter : client.Gauge
    gauges.push(
      new Metric({
        name: series.prom,
        help: series.help,
        labelNames: ['key', ...series.labels],
        registers,
        collect() {
          this.reset()
          for (const [key, s] of Object.entries(snapshot())) {
            series.read(s, (labels, value) => (series.kind === 'counter' ? this.inc({ key, ...labels }, value) : this.set({ key, ...labels }, value)))
          }
        },
      }),
    )
  }

  const unlisten = listen(rx, {
    settle: (m) => {
      duration.observe({ key: m.key, verdict: m.verdict }, m.durationMs / 1000)
      wait.observe({ key: m.key }, m.waitMs / 1000)
    },
    // A key refused with 'registry' never entered the registry and is never evicted: counted
    // without it (key=""), or untrusted keys would each leave a series behind.
    reject: (m) => rejections.inc({ key: m.reason === 'registry' ? '' : m.key, reason: m.reason }),
    leave: (m) => {
      if (m.reason === 'timeout') queueTimeouts.inc({ key: m.key })
    },
  })
  // A key evicted from the registry (maxKeys) takes its series along: untrusted keys cannot
  // grow the registry beyond maxKeys keys' worth of series.
  const evictions = rx.onEvict(({ key }) => {
    for (const verdict of VERDICTS) duration.remove({ key, verdict })
    wait.remove({ key })
    for (const reason of REJECT_REASONS) rejections.remove({ key, reason })
    queueTimeouts.remove({ key })
  })

  const metrics = [duration, wait, rejections, queueTimeouts, ...gauges]
  return instrumentation(() => {
    unlisten()
    evictions.dispose()
    for (const r of registers) for (const m of metrics) r.removeSingleMetric(m.name)
  })
}

module.exports = { instrument }
