'use strict'
// resilix/otel: one Resilix instance's calls and state as OpenTelemetry metrics (ADR 0007).
// Names follow OpenTelemetry's semantic-convention guidelines: `resilix.` namespace, durations
// as `*.duration` histograms in seconds with the advised buckets, UpDownCounters not pluralized,
// no `_total`, attributes under `resilix.`. Calls are counted from the per-call diagnostics
// channels; the state is read from one rx.stats() per collection. @opentelemetry/api is an
// optional peer dependency, required only when no meter is given.

const { BUCKETS, STATES, checkArguments, peer, listen, snapshots, instrumentation } = require('./lib/metrics/common')
const { SERIES, ATTRIBUTES } = require('./lib/metrics/policies')
const { version } = require('./package.json')

const MODULE = 'resilix/otel'

/**
 * Records resilix's metrics with `options.meter` (default: the global MeterProvider's meter
 * `'resilix'`). Returns `{ dispose() }`, which stops recording and observing.
 * @param {import('./index').Resilix} rx
 * @param {import('./otel').OtelOptions} [options]
 */
function instrument(rx, options) {
  const o = checkArguments(MODULE, rx, options, ['meter', 'buckets'])
  const meter = o.meter ?? peer(MODULE, '@opentelemetry/api').metrics.getMeter('resilix', version)
  const advice = { explicitBucketBoundaries: o.buckets ?? BUCKETS }
  const snapshot = snapshots(rx)

  const duration = meter.createHistogram('resilix.call.duration', {
    description: 'Calls that ran, from the start of fn (or the permit) to their settle',
    unit: 's',
    advice,
  })
  const wait = meter.createHistogram('resilix.call.wait_time', {
    description: 'Time calls that ran waited in the queue before they started',
    unit: 's',
    advice,
  })
  const rejections = meter.createCounter('resilix.call.rejections', {
    description: 'Calls refused by resilix (the upstream was not called)',
    unit: '{call}',
  })
  const queueTimeouts = meter.createCounter('resilix.queue.timeouts', {
    description: 'Calls whose deadline passed while they waited in the queue (they never ran)',
    unit: '{timeout}',
  })
  const limit = meter.createObservableUpDownCounter('resilix.call.limit', { description: 'The concurrency limit in force', unit: '{call}' })
  const active = meter.createObservableUpDownCounter('resilix.call.active', { description: 'Calls holding a permit', unit: '{call}' })
  const queued = meter.createObservableUpDownCounter('resilix.call.queued', { description: 'Calls waiting in the queue', unit: '{call}' })
  const breaker = meter.createObservableUpDownCounter('resilix.breaker.state', {
    description: 'The circuit breaker state: 1 for the current state (resilix.breaker.state), 0 for the others',
    unit: '{breaker}',
  })
  // Every policy's figures (ADR 1230), observed from the same snapshot.
  const create = { counter: 'createObservableCounter', updown: 'createObservableUpDownCounter', gauge: 'createObservableGauge' }
  const policies = SERIES.map((series) => [series, meter[create[series.kind]](series.otel, { description: series.help, unit: series.unit })])
  const observables = [limit, active, queued, breaker, ...policies.map(([, o]) => o)]

  const collect = (result) => {
    for (const [key, s] of Object.entries(snapshot())) {
      const a = { 'resilix.key': key }
      if (s.limit !== null) result.observe(limit, s.limit, a)
      result.observe(active, s.inflight, a)
      result.observe(queued, s.queued, a)
      if (s.breaker !== null) {
        for (const state of STATES) result.observe(breaker, s.breaker === state ? 1 : 0, { ...a, 'resilix.breaker.state': state })
      }
      for (const [series, o] of policies) series.read(s, (labels, value) => result.observe(o, value, attributes(key, labels)))
    }
  }
  meter.addBatchObservableCallback(collect, observables)

  const unlisten = listen(rx, {
    settle: (m) => {
      duration.record(m.durationMs / 1000, { 'resilix.key': m.key, 'resilix.verdict': m.verdict })
      wait.record(m.waitMs / 1000, { 'resilix.key': m.key })
    },
    // A key refused with 'registry' never entered the registry: recorded without it, or
    // untrusted keys would each make an attribute set.
    reject: (m) =>
      rejections.add(1, m.reason === 'registry' ? { 'resilix.rejection.reason': m.reason } : { 'resilix.key': m.key, 'resilix.rejection.reason': m.reason }),
    leave: (m) => {
      if (m.reason === 'timeout') queueTimeouts.add(1, { 'resilix.key': m.key })
    },
  })

  return instrumentation(() => {
    unlisten()
    meter.removeBatchObservableCallback(collect, observables)
  })
}

/** OpenTelemetry attributes of a key's series with `labels` (lib/metrics/policies.js). */
function attributes(key, labels) {
  const a = { 'resilix.key': key }
  for (const [k, v] of Object.entries(labels)) a[ATTRIBUTES[k]] = v
  return a
}

module.exports = { instrument }
