// resilix's state and events as OpenTelemetry metrics, written against the @opentelemetry/api
// Meter interface. No hard dependency: with @opentelemetry/api installed (and your SDK's
// MeterProvider registered, which is what exports anything), the example uses its meter; without
// the package it runs with a tiny console meter below that prints what an exporter would send.
//   node examples/otel-metrics.mjs
//
// In your app, copy `instrumentResilix` and call it once:
//   import { metrics } from '@opentelemetry/api'
//   const handle = instrumentResilix(rx, metrics.getMeter('resilix'))
//   … handle.dispose() on shutdown
//
// What it exports, every metric with the attribute `resilix.key` (the upstream key):
//   resilix.limit            gauge    the concurrency limit in force
//   resilix.inflight         gauge    calls holding a permit
//   resilix.queued           gauge    calls waiting in the queue
//   resilix.breaker.open     gauge    1 while the breaker is open, 0.5 half-open, 0 closed
//   resilix.latency.smoothed gauge ms the limiter's smoothed latency (p90 per window)
//   resilix.latency.baseline gauge ms the limiter's no-load reference latency
//   resilix.calls            counter  settled calls, attribute `resilix.verdict`
//   resilix.rejections       counter  calls refused by resilix, attribute `resilix.reason`
//   resilix.limit.changes    counter  limit changes (events), attribute `resilix.direction`
//   resilix.breaker.transitions counter breaker changes (events), attributes `resilix.from/to`
// Gauges and the two cumulative counters are read from one `rx.stats()` per collection (a
// batch observable callback: no timer of ours, no cost between collections). The counters
// are cumulative since the key was created; a key evicted from the registry (maxKeys) starts
// again at 0, which OpenTelemetry's cumulative temporality reads as a reset.
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { Resilix } from 'resilix' // resolves to this repository (package self-reference)

const BREAKER = { closed: 0, 'half-open': 0.5, open: 1 }

/** Exports `rx`'s stats and events through an OpenTelemetry Meter. Returns `{ dispose() }`. */
export function instrumentResilix(rx, meter) {
  const gauge = (name, description, unit) => meter.createObservableGauge(name, { description, unit })
  const g = {
    limit: gauge('resilix.limit', 'concurrency limit in force', '{call}'),
    inflight: gauge('resilix.inflight', 'calls holding a permit', '{call}'),
    queued: gauge('resilix.queued', 'calls waiting in the queue', '{call}'),
    breaker: gauge('resilix.breaker.open', 'breaker state: 0 closed, 0.5 half-open, 1 open'),
    smoothed: gauge('resilix.latency.smoothed', "the limiter's smoothed latency", 'ms'),
    baseline: gauge('resilix.latency.baseline', "the limiter's no-load latency", 'ms'),
  }
  const calls = meter.createObservableCounter('resilix.calls', { description: 'settled calls by verdict', unit: '{call}' })
  const rejections = meter.createObservableCounter('resilix.rejections', { description: 'calls refused by resilix, by reason', unit: '{call}' })
  const observables = [...Object.values(g), calls, rejections]

  const collect = (result) => {
    for (const [key, s] of Object.entries(rx.stats())) {
      const a = { 'resilix.key': key }
      if (s.limit !== null) result.observe(g.limit, s.limit, a)
      result.observe(g.inflight, s.inflight, a)
      result.observe(g.queued, s.queued, a)
      if (s.breaker !== null) result.observe(g.breaker, BREAKER[s.breaker], a)
      if (s.smoothedMs > 0) result.observe(g.smoothed, s.smoothedMs, a)
      if (s.baselineMs > 0) result.observe(g.baseline, s.baselineMs, a)
      for (const [verdict, n] of Object.entries(s.verdicts)) result.observe(calls, n, { ...a, 'resilix.verdict': verdict })
      for (const [reason, n] of Object.entries(s.rejections)) result.observe(rejections, n, { ...a, 'resilix.reason': reason })
    }
  }
  meter.addBatchObservableCallback(collect, observables)

  // Events: counted as they happen (they also say when, which a gauge sampled later cannot).
  const limitChanges = meter.createCounter('resilix.limit.changes', { description: 'limit changes' })
  const transitions = meter.createCounter('resilix.breaker.transitions', { description: 'breaker state changes' })
  const subs = [
    rx.onLimitChange((e) => limitChanges.add(1, { 'resilix.key': e.key, 'resilix.direction': e.limit > e.previous ? 'up' : 'down' })),
    rx.onBreakerStateChange((e) => transitions.add(1, { 'resilix.key': e.key, 'resilix.from': e.previous, 'resilix.to': e.state })),
  ]
  return {
    dispose() {
      meter.removeBatchObservableCallback(collect, observables)
      for (const s of subs) s.dispose()
    },
  }
}

/**
 * A console stand-in for an OpenTelemetry Meter: the subset instrumentResilix uses, and a
 * `collect()` that prints each data point the way a Prometheus exporter would name it.
 */
export function consoleMeter(print = console.log) {
  const callbacks = new Set()
  const counters = []
  const instrument = (name, kind) => ({ name, kind })
  const line = (name, attrs, value) => {
    const labels = Object.entries(attrs).map(([k, v]) => `${k.replace(/\W/g, '_')}="${v}"`).join(',')
    print(`${name.replace(/\W/g, '_')}{${labels}} ${Number.isInteger(value) ? value : value.toFixed(2)}`)
  }
  return {
    createObservableGauge: (name) => instrument(name, 'gauge'),
    createObservableCounter: (name) => instrument(name, 'counter'),
    createCounter(name) {
      const points = new Map()
      const c = {
        name,
        add(v, attrs = {}) {
          const id = JSON.stringify(attrs)
          const p = points.get(id) || { attrs, value: 0 }
          p.value += v
          points.set(id, p)
        },
        points,
      }
      counters.push(c)
      return c
    },
    addBatchObservableCallback: (cb) => callbacks.add(cb),
    removeBatchObservableCallback: (cb) => callbacks.delete(cb),
    collect() {
      // Zero counts are left out to keep the print short (an exporter would send them).
      const result = { observe: (inst, value, attrs) => (inst.kind === 'counter' && value === 0) || line(inst.name, attrs, value) }
      for (const cb of callbacks) cb(result)
      for (const c of counters) for (const p of c.points.values()) line(c.name, p.attrs, p.value)
    },
  }
}

async function main() {
  let meter
  let collect = null
  try {
    const { metrics } = await import('@opentelemetry/api')
    meter = metrics.getMeter('resilix-example')
    console.log('using @opentelemetry/api: data points go to the MeterProvider your SDK registered (none here: the API is a no-op until one is)')
  } catch {
    const m = consoleMeter()
    meter = m
    collect = () => m.collect()
    console.log('@opentelemetry/api is not installed: printing data points with the console stand-in meter')
  }

  // A local upstream: 20 ms per request, 1 in 10 answers 429.
  const server = http.createServer((req, res) => setTimeout(() => res.writeHead(Math.random() < 0.1 ? 429 : 200).end(), 20))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${server.address().port}/`

  const rx = new Resilix({ timeoutMs: 1000 })
  const handle = instrumentResilix(rx, meter)
  const call = (key) =>
    rx.execute(async (ctx) => {
      const res = await fetch(url, { signal: ctx.signal })
      await res.arrayBuffer()
      return res
    }, { key }).catch(() => {})

  // Two collections, as a periodic reader would do them, around a second of traffic.
  const until = Date.now() + 1000
  const pending = []
  let collected = 0
  while (Date.now() < until) {
    for (const key of ['payments.example', 'search.example']) pending.push(call(key))
    await new Promise((r) => setTimeout(r, 5))
    if (collect && collected === 0 && Date.now() > until - 500) {
      collected++
      console.log('\n-- collection 1 (mid-run)')
      collect()
    }
  }
  await Promise.all(pending)
  if (collect) {
    console.log('\n-- collection 2 (after the run)')
    collect()
  }
  handle.dispose()
  server.close()
  server.closeAllConnections()
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main()
