// resilix/prometheus against the real prom-client, resilix/otel against the OpenTelemetry SDK's
// in-memory exporter: the same workload, the names each ecosystem expects, the values it gives.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import client from 'prom-client'
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality, DataPointType } from '@opentelemetry/sdk-metrics'
import { Resilix } from '../index.js'
import * as prometheus from '../prometheus.js'
import * as otel from '../otel.js'
import { redisQuotaStore } from '../redis.js'
import { sleep, deferred, keepAlive } from './helpers.mjs'
import { startPolicyUpstream, failingStore } from './fixtures/policy-upstream.mjs'

/** The series read from stats() for every policy (ADR 1230); the quota's appear only with a quota. */
const POLICY_SERIES = {
  prom: [
    'resilix_retries_total', 'resilix_retry_budget_refusals_total', 'resilix_retry_body_refusals_total', 'resilix_throttle_probability',
    'resilix_queue_waiting', 'resilix_queue_rejections_total', 'resilix_quota_spent', 'resilix_quota_limit', 'resilix_quota_window_seconds',
    'resilix_quota_waiting', 'resilix_quota_cooldown_seconds', 'resilix_quota_cooldowns_total', 'resilix_quota_store_state',
    'resilix_quota_store_errors_total', 'resilix_quota_store_fallbacks_total', 'resilix_quota_store_leases_total', 'resilix_quota_store_latency_seconds',
  ],
  otelWithoutQuota: [
    'resilix.retries', 'resilix.retry.budget_refusals', 'resilix.retry.body_refusals', 'resilix.throttle.probability', 'resilix.queue.waiting', 'resilix.queue.rejections',
  ],
}

/**
 * On key 'api' (limit 1, at most 2 waiting): a success of ~30 ms, a 404, a 503, a thrown
 * error, a call refused by the queue's cap and one whose deadline passes while it waits; one
 * call still running when it returns (`release()` ends it). 'other' gets one success.
 */
async function workload(rx) {
  await rx.execute(() => sleep(30), { key: 'api' })
  await rx.execute(async () => ({ status: 404 }), { key: 'api' })
  await rx.execute(async () => ({ status: 503 }), { key: 'api' })
  await assert.rejects(rx.execute(() => Promise.reject(new Error('plain')), { key: 'api' }))
  await rx.execute(() => 1, { key: 'other' })
  const hold = deferred()
  const running = rx.execute(() => hold.promise, { key: 'api' })
  const stop = keepAlive()
  // Waits (the queue expects ~50 ms: one call ahead and its own, each of the ~25 ms the key's
  // calls have held their slot), then times out behind the held call.
  const late = rx.execute(() => 1, { key: 'api', timeoutMs: 100 })
  const waiting = rx.execute(() => 1, { key: 'api' })
  await assert.rejects(rx.execute(() => 1, { key: 'api' }), { name: 'RejectedError', reason: 'queue' })
  await assert.rejects(late, { name: 'TimeoutError', queued: true })
  stop()
  return async () => {
    hold.resolve()
    await running
    await waiting
  }
}

// The throttle off: the workload's one 503 among four calls could engage it (ADR 1000), and
// the refusals asserted here are the queue's.
const options = { algorithm: 'fixed', initialLimit: 1, queue: { maxQueued: 2 }, throttle: false }

test('resilix/prometheus: prom-client metrics named by its conventions, with the workload counted', async () => {
  const registry = new client.Registry()
  const rx = new Resilix(options)
  const bystander = new Resilix()
  const m = prometheus.instrument(rx, { registry })
  await bystander.execute(() => 1, { key: 'api' }) // another instance: not counted
  const release = await workload(rx)

  const json = await registry.getMetricsAsJSON()
  const byName = Object.fromEntries(json.map((x) => [x.name, x]))
  // Conventions: snake_case under resilix_, counters end in _total, durations are histograms in seconds.
  for (const x of json) {
    assert.match(x.name, /^resilix_[a-z_]+$/)
    if (x.type === 'counter') assert.match(x.name, /_total$/, x.name)
    if (x.type === 'histogram') assert.match(x.name, /_seconds$/, x.name)
  }
  assert.deepEqual(Object.keys(byName).sort(), [
    'resilix_breaker_state', 'resilix_call_active', 'resilix_call_duration_seconds', 'resilix_call_limit',
    'resilix_call_queued', 'resilix_call_rejections_total', 'resilix_call_wait_time_seconds', 'resilix_queue_timeouts_total',
    ...POLICY_SERIES.prom,
  ].sort())
  const value = (name, labels, metricName) =>
    byName[name].values.find((v) => v.metricName === metricName && Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value
  const count = (verdict, key = 'api') => value('resilix_call_duration_seconds', { key, verdict }, 'resilix_call_duration_seconds_count')
  assert.deepEqual(['success', 'answered', 'overload', 'failure'].map((v) => count(v)), [1, 1, 1, 1])
  assert.equal(count('success', 'other'), 1)
  const sum = value('resilix_call_duration_seconds', { key: 'api', verdict: 'success' }, 'resilix_call_duration_seconds_sum')
  assert.ok(sum >= 0.025 && sum < 2, `a 30 ms call is ~0.03 s: ${sum}`)
  assert.equal(value('resilix_call_rejections_total', { key: 'api', reason: 'queue' }), 1)
  assert.equal(value('resilix_queue_timeouts_total', { key: 'api' }), 1)
  // The gauges, read at the scrape: one call running, one waiting.
  assert.equal(value('resilix_call_limit', { key: 'api' }), 1)
  assert.equal(value('resilix_call_active', { key: 'api' }), 1)
  assert.equal(value('resilix_call_queued', { key: 'api' }), 1)
  assert.equal(value('resilix_breaker_state', { key: 'api', state: 'closed' }), 1)
  assert.equal(value('resilix_breaker_state', { key: 'api', state: 'open' }), 0)

  await release()
  const waited = (await registry.getSingleMetric('resilix_call_wait_time_seconds').get()).values
  const waitSum = waited.find((v) => v.metricName === 'resilix_call_wait_time_seconds_sum' && v.labels.key === 'api').value
  assert.ok(waitSum > 0, 'the call that waited reports its wait')

  m.dispose()
  m.dispose()
  assert.deepEqual(await registry.getMetricsAsJSON(), [], 'dispose() unregisters every metric')
  await rx.execute(() => 1, { key: 'api' }) // and counting stops: a new instrument starts from nothing
  const again = prometheus.instrument(rx, { registry })
  const after = await registry.getSingleMetric('resilix_call_duration_seconds').get()
  assert.equal(after.values.filter((v) => v.metricName.endsWith('_count')).length, 0)
  again.dispose()
})

test('resilix/prometheus: an evicted key takes its series along; registry refusals are counted without their key', async () => {
  const registry = new client.Registry()
  const rx = new Resilix({ maxKeys: 1 })
  const m = prometheus.instrument(rx, { registry })
  await rx.execute(() => 1, { key: 'a' })
  await rx.execute(() => 1, { key: 'b' }) // evicts the idle 'a'
  const keys = async (name) => new Set((await registry.getSingleMetric(name).get()).values.map((v) => v.labels.key))
  assert.deepEqual([...(await keys('resilix_call_duration_seconds'))], ['b'])
  assert.deepEqual([...(await keys('resilix_call_wait_time_seconds'))], ['b'])

  const busy = deferred()
  const holding = rx.execute(() => busy.promise, { key: 'b' })
  for (const key of ['x1', 'x2', 'x3']) await assert.rejects(rx.execute(() => 1, { key }), { reason: 'registry' })
  const refused = (await registry.getSingleMetric('resilix_call_rejections_total').get()).values
  assert.deepEqual(refused.map((v) => [v.labels.key, v.labels.reason, v.value]), [['', 'registry', 3]])
  busy.resolve()
  await holding
  m.dispose()
})

test('resilix/prometheus: arguments are checked, naming the problem', () => {
  const rx = new Resilix()
  assert.throws(() => prometheus.instrument({}), /resilix\/prometheus: instrument\(rx, options\) expects a Resilix instance as rx/)
  assert.throws(() => prometheus.instrument(rx, { regsitry: new client.Registry() }), /unknown option regsitry: did you mean registry\?/)
  const registry = new client.Registry()
  const m = prometheus.instrument(rx, { registry })
  assert.throws(() => prometheus.instrument(rx, { registry }), /already been registered/, 'once per registry: prom-client says so')
  m.dispose()
})

/** An SDK MeterProvider whose reader exports to memory on demand (`collect()`). */
function sdk() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const provider = new MeterProvider({ readers: [reader] })
  const collect = async () => {
    exporter.reset()
    await reader.forceFlush()
    return exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
  }
  return { meter: provider.getMeter('resilix-test'), collect, shutdown: () => provider.shutdown() }
}

test('resilix/otel: OpenTelemetry metrics named by the semantic conventions, through the SDK in-memory exporter', async () => {
  const { meter, collect, shutdown } = sdk()
  const rx = new Resilix(options)
  const m = otel.instrument(rx, { meter })
  await new Resilix().execute(() => 1, { key: 'api' }) // another instance: not recorded
  const release = await workload(rx)

  const metrics = await collect()
  const byName = Object.fromEntries(metrics.map((x) => [x.descriptor.name, x]))
  assert.deepEqual(Object.keys(byName).sort(), [
    'resilix.breaker.state', 'resilix.call.active', 'resilix.call.duration', 'resilix.call.limit', 'resilix.call.queued',
    'resilix.call.rejections', 'resilix.call.wait_time', 'resilix.queue.timeouts',
    ...POLICY_SERIES.otelWithoutQuota,
  ].sort())
  // Conventions: dotted names under resilix., no _total, durations are histograms in seconds
  // with the advised buckets, counts have a {unit} annotation.
  for (const x of metrics) {
    assert.match(x.descriptor.name, /^resilix(\.[a-z_]+)+$/)
    assert.doesNotMatch(x.descriptor.name, /total/)
    if (x.dataPointType === DataPointType.HISTOGRAM) {
      assert.equal(x.descriptor.unit, 's', x.descriptor.name)
      assert.deepEqual(x.dataPoints[0].value.buckets.boundaries, [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10])
    } else assert.match(x.descriptor.unit, /^(\{[a-z]+\}|s|1)$/, x.descriptor.name)
  }
  const point = (name, attrs) =>
    byName[name].dataPoints.find((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v) && Object.keys(p.attributes).length === Object.keys(attrs).length)?.value
  const calls = (verdict, key = 'api') => point('resilix.call.duration', { 'resilix.key': key, 'resilix.verdict': verdict })?.count
  assert.deepEqual(['success', 'answered', 'overload', 'failure'].map((v) => calls(v)), [1, 1, 1, 1])
  assert.equal(calls('success', 'other'), 1)
  const success = point('resilix.call.duration', { 'resilix.key': 'api', 'resilix.verdict': 'success' })
  assert.ok(success.sum >= 0.025 && success.sum < 2, `a 30 ms call is ~0.03 s: ${success.sum}`)
  assert.equal(point('resilix.call.rejections', { 'resilix.key': 'api', 'resilix.rejection.reason': 'queue' }), 1)
  assert.equal(point('resilix.queue.timeouts', { 'resilix.key': 'api' }), 1)
  assert.equal(point('resilix.call.limit', { 'resilix.key': 'api' }), 1)
  assert.equal(point('resilix.call.active', { 'resilix.key': 'api' }), 1)
  assert.equal(point('resilix.call.queued', { 'resilix.key': 'api' }), 1)
  assert.equal(point('resilix.breaker.state', { 'resilix.key': 'api', 'resilix.breaker.state': 'closed' }), 1)
  assert.equal(point('resilix.breaker.state', { 'resilix.key': 'api', 'resilix.breaker.state': 'half-open' }), 0)

  await release() // the running and the waiting call succeed: 3 successes
  const successes = async (list) =>
    list.find((x) => x.descriptor.name === 'resilix.call.duration').dataPoints.find((p) => p.attributes['resilix.verdict'] === 'success' && p.attributes['resilix.key'] === 'api').value.count
  assert.equal(await successes(await collect()), 3)
  m.dispose()
  await rx.execute(() => 1, { key: 'api' })
  let reads = 0
  const stats = rx.stats.bind(rx)
  rx.stats = (...args) => {
    reads++
    return stats(...args)
  }
  const after = await collect()
  assert.equal(reads, 0, 'dispose() removes the observable callback: a collection reads no stats')
  assert.equal(await successes(after), 3, 'no recording after dispose()')
  await shutdown()
})

test('resilix/otel: without a meter, the global MeterProvider of @opentelemetry/api', async () => {
  const { metrics } = await import('@opentelemetry/api')
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const provider = new MeterProvider({ readers: [reader] })
  metrics.setGlobalMeterProvider(provider)
  try {
    const rx = new Resilix()
    const m = otel.instrument(rx)
    await rx.execute(() => 1, { key: 'k' })
    await reader.forceFlush()
    const scopes = exporter.getMetrics().flatMap((r) => r.scopeMetrics)
    assert.deepEqual(scopes.map((s) => s.scope.name), ['resilix'])
    assert.equal(scopes[0].scope.version, JSON.parse((await import('node:fs')).readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version)
    m.dispose()
  } finally {
    metrics.disable()
    await provider.shutdown()
  }
  assert.throws(() => otel.instrument(new Resilix(), { meter: undefined, bucket: [1] }), /resilix\/otel: unknown option bucket: did you mean buckets\?/)
})

/**
 * Retries, retry-budget refusals and throttle refusals on key 'up' of `rx` (one retry allowed per
 * 10 s, every answer a 429 without a hint): calls until the throttle refuses one.
 */
async function retriesAndThrottle(up, rx) {
  for (let i = 0; i < 200; i++) {
    const err = await up.get(rx, 'up', '/overloaded').then(() => null, (e) => e)
    if (err?.reason === 'throttle') return
  }
  assert.fail('the throttle never refused a call')
}
const retrying = { seed: 1, breaker: false, retry: { attempts: 2, baseMs: 0, maxDelayMs: 0 }, retryBudget: { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 }, throttle: { multiplier: 1 } }

/**
 * Key 'llm' of a quota of 2 requests a minute shared through a store that fails (the key falls
 * back): a 200, a 429 with `retry-after: 30` (the key cools down), then a call that waits for
 * budget. Returns what ends the wait.
 */
async function quotaWaitAndCooldown(up, rx) {
  await up.get(rx, 'llm', '/ok')
  await up.get(rx, 'llm', '/cooldown')
  const ac = new AbortController()
  const waiting = up.get(rx, 'llm', '/ok', { timeoutMs: 120_000, signal: ac.signal })
  await sleep(20)
  return async () => {
    ac.abort()
    await assert.rejects(waiting, { name: 'AbortError' })
  }
}
const quotaShared = () => ({ quota: { requests: 2, windowMs: 60_000, pace: true }, quotaStore: redisQuotaStore(failingStore(), { processes: 1 }) })

/** The value of the sample `name{labels}` in prom-client's text exposition, or undefined. */
function sample(text, name, labels) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${want}} `))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

test('resilix/prometheus: every policy in the registry text: retries, retry budget, throttle, quota wait and cooldown, store fallback', async () => {
  const up = await startPolicyUpstream()
  const registry = new client.Registry()
  const rx = new Resilix(retrying)
  const q = new Resilix(quotaShared())
  const qRegistry = new client.Registry()
  const m = prometheus.instrument(rx, { registry })
  const mq = prometheus.instrument(q, { registry: qRegistry })
  try {
    await retriesAndThrottle(up, rx)
    const text = await registry.metrics()
    const s = rx.stats('up')
    assert.match(text, /# TYPE resilix_retries_total counter/)
    assert.equal(sample(text, 'resilix_retries_total', { key: 'up' }), 1, 'one retry in the budget')
    assert.ok(s.retryBudgetRefusals >= 1)
    assert.equal(sample(text, 'resilix_retry_budget_refusals_total', { key: 'up' }), s.retryBudgetRefusals)
    assert.equal(sample(text, 'resilix_retry_body_refusals_total', { key: 'up' }), 0)
    assert.ok(s.rejections.throttle >= 1)
    assert.equal(sample(text, 'resilix_call_rejections_total', { key: 'up', reason: 'throttle' }), s.rejections.throttle)
    const p = sample(text, 'resilix_throttle_probability', { key: 'up' })
    assert.ok(p > 0 && p <= 0.9, `the throttle refuses at a probability in (0, 0.9]: ${p}`)
    assert.equal(sample(text, 'resilix_queue_waiting', { key: 'up', priority: 'normal' }), 0)
    assert.equal(sample(text, 'resilix_queue_rejections_total', { key: 'up', priority: 'low' }), 0)
    assert.equal(sample(text, 'resilix_quota_spent', { key: 'up', budget: '0', cost: 'requests' }), undefined, 'no quota, no quota series')

    const stop = await quotaWaitAndCooldown(up, q)
    const qt = await qRegistry.metrics()
    assert.equal(sample(qt, 'resilix_quota_spent', { key: 'llm', budget: '0', cost: 'requests' }), 2)
    assert.equal(sample(qt, 'resilix_quota_limit', { key: 'llm', budget: '0', cost: 'requests' }), 2)
    assert.equal(sample(qt, 'resilix_quota_window_seconds', { key: 'llm', budget: '0', cost: 'requests' }), 60)
    assert.equal(sample(qt, 'resilix_quota_waiting', { key: 'llm' }), 1)
    const cooling = sample(qt, 'resilix_quota_cooldown_seconds', { key: 'llm' })
    assert.ok(cooling > 20 && cooling <= 30, `a 30 s retry-after cools the key down for up to 30 s: ${cooling}`)
    assert.equal(sample(qt, 'resilix_quota_cooldowns_total', { key: 'llm' }), 1)
    assert.equal(sample(qt, 'resilix_quota_store_state', { key: 'llm', state: 'fallback' }), 1)
    assert.equal(sample(qt, 'resilix_quota_store_state', { key: 'llm', state: 'leased' }), 0)
    assert.ok(sample(qt, 'resilix_quota_store_errors_total', { key: 'llm' }) >= 1)
    assert.equal(sample(qt, 'resilix_quota_store_fallbacks_total', { key: 'llm' }), 1)
    assert.ok(sample(qt, 'resilix_quota_store_leases_total', { key: 'llm' }) >= 1)
    assert.equal(sample(qt, 'resilix_quota_store_latency_seconds', { key: 'llm' }), 0, 'the store never answered')
    await stop()
    assert.equal(sample(await qRegistry.metrics(), 'resilix_quota_waiting', { key: 'llm' }), 0)
  } finally {
    m.dispose()
    mq.dispose()
    rx.close()
    q.close()
    await up.close()
  }
})

test('resilix/otel: every policy through the SDK in-memory exporter: retries, retry budget, throttle, quota wait and cooldown, store fallback', async () => {
  const up = await startPolicyUpstream()
  const { meter, collect, shutdown } = sdk()
  const rx = new Resilix(retrying)
  const q = new Resilix(quotaShared())
  const m = otel.instrument(rx, { meter })
  const mq = otel.instrument(q, { meter })
  try {
    await retriesAndThrottle(up, rx)
    const stop = await quotaWaitAndCooldown(up, q)
    const metrics = await collect()
    const byName = Object.fromEntries(metrics.map((x) => [x.descriptor.name, x]))
    const point = (name, attrs) =>
      byName[name]?.dataPoints.find((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v) && Object.keys(p.attributes).length === Object.keys(attrs).length)?.value
    const s = rx.stats('up')
    const up1 = { 'resilix.key': 'up' }
    const llm = { 'resilix.key': 'llm' }
    const budget = { ...llm, 'resilix.quota.budget': '0', 'resilix.quota.cost': 'requests' }
    assert.equal(byName['resilix.retries'].dataPointType, DataPointType.SUM)
    assert.equal(byName['resilix.retries'].isMonotonic, true)
    assert.equal(point('resilix.retries', up1), 1)
    assert.equal(point('resilix.retry.budget_refusals', up1), s.retryBudgetRefusals)
    assert.ok(s.retryBudgetRefusals >= 1)
    assert.equal(point('resilix.call.rejections', { ...up1, 'resilix.rejection.reason': 'throttle' }), s.rejections.throttle)
    const p = point('resilix.throttle.probability', up1)
    assert.ok(p > 0 && p <= 0.9, `the throttle refuses at a probability in (0, 0.9]: ${p}`)
    assert.equal(byName['resilix.throttle.probability'].descriptor.unit, '1')
    assert.equal(point('resilix.queue.waiting', { ...up1, 'resilix.priority': 'critical' }), 0)
    assert.equal(point('resilix.quota.spent', budget), 2)
    assert.equal(point('resilix.quota.limit', budget), 2)
    assert.equal(point('resilix.quota.window', budget), 60)
    assert.equal(point('resilix.quota.waiting', llm), 1)
    const cooling = point('resilix.quota.cooldown', llm)
    assert.ok(cooling > 20 && cooling <= 30, `a 30 s retry-after cools the key down for up to 30 s: ${cooling}`)
    assert.equal(byName['resilix.quota.cooldown'].descriptor.unit, 's')
    assert.equal(point('resilix.quota.cooldowns', llm), 1)
    assert.equal(point('resilix.quota.store.state', { ...llm, 'resilix.store.state': 'fallback' }), 1)
    assert.equal(point('resilix.quota.store.state', { ...llm, 'resilix.store.state': 'refusing' }), 0)
    assert.ok(point('resilix.quota.store.errors', llm) >= 1)
    assert.equal(point('resilix.quota.store.fallbacks', llm), 1)
    assert.ok(point('resilix.quota.store.leases', llm) >= 1)
    await stop()
  } finally {
    m.dispose()
    mq.dispose()
    rx.close()
    q.close()
    await up.close()
    await shutdown()
  }
})
