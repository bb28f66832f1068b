'use strict'
// The policies' figures read from one stats() snapshot, named once for both exporters (ADR 1230):
// retries, the throttle, the quota and its fleet store, the queue by priority class. Each series gives its
// Prometheus name (snake_case, `_total` counters, seconds) and its OpenTelemetry name (dotted,
// with a unit string). Labels are the key and a fixed set: `priority` (5 classes), `budget`
// (the budget's index in the key's quota) with its `cost` (the name it counts), `state` (the
// store's 3): a key has at most a few dozen series, and keys are bounded by maxKeys.

const PRIORITIES = ['critical', 'high', 'normal', 'low', 'sheddable']
const STORE_STATES = ['leased', 'fallback', 'refusing']

/** OpenTelemetry attribute names of the labels. */
const ATTRIBUTES = {
  key: 'resilix.key',
  priority: 'resilix.priority',
  budget: 'resilix.quota.budget',
  cost: 'resilix.quota.cost',
  state: 'resilix.store.state',
}

const perBudget = (field, scale = 1) => (s, out) => {
  if (s.quota === null) return
  s.quota.budgets.forEach((b, i) => out({ budget: String(i), cost: b.name }, b[field] * scale))
}
const quota = (read) => (s, out) => s.quota !== null && read(s.quota, out)
const store = (read) => (s, out) => s.quota !== null && s.quota.store !== null && read(s.quota.store, out)
const byPriority = (field) => (s, out) => {
  for (const priority of PRIORITIES) out({ priority }, s[field][priority])
}

/**
 * `kind`: 'counter' (monotonic since the key was created), 'updown' (a count of things now),
 * 'gauge' (a level). `labels`: beside `key`. `read(keyStats, out)` calls `out(labels, value)`.
 */
const SERIES = [
  { prom: 'resilix_retries_total', otel: 'resilix.retries', kind: 'counter', unit: '{retry}', labels: [], help: 'Retries made (attempts after the first)', read: (s, out) => out({}, s.retries) },
  { prom: 'resilix_retry_budget_refusals_total', otel: 'resilix.retry.budget_refusals', kind: 'counter', unit: '{retry}', labels: [], help: 'Retries the retry budget refused', read: (s, out) => out({}, s.retryBudgetRefusals) },
  { prom: 'resilix_retry_body_refusals_total', otel: 'resilix.retry.body_refusals', kind: 'counter', unit: '{retry}', labels: [], help: 'Retries not made because the request body could not be sent again', read: (s, out) => out({}, s.retryBodyRefusals) },
  { prom: 'resilix_throttle_probability', otel: 'resilix.throttle.probability', kind: 'gauge', unit: '1', labels: [], help: 'The probability the adaptive throttle refuses a call now (0 to 1)', read: (s, out) => out({}, s.throttleProbability) },
  { prom: 'resilix_queue_waiting', otel: 'resilix.queue.waiting', kind: 'updown', unit: '{call}', labels: ['priority'], help: 'Calls waiting in the queue, by priority class', read: byPriority('queuedByPriority') },
  { prom: 'resilix_queue_rejections_total', otel: 'resilix.queue.rejections', kind: 'counter', unit: '{call}', labels: ['priority'], help: 'Calls the queue refused, by priority class', read: byPriority('queueRefusalsByPriority') },
  { prom: 'resilix_quota_spent', otel: 'resilix.quota.spent', kind: 'gauge', unit: '{cost}', labels: ['budget', 'cost'], help: 'Spent in the current window of each budget', read: perBudget('spent') },
  { prom: 'resilix_quota_limit', otel: 'resilix.quota.limit', kind: 'gauge', unit: '{cost}', labels: ['budget', 'cost'], help: 'What each budget allows per window', read: perBudget('limit') },
  { prom: 'resilix_quota_window_seconds', otel: 'resilix.quota.window', kind: 'gauge', unit: 's', labels: ['budget', 'cost'], help: 'The window of each budget', read: perBudget('windowMs', 1 / 1000) },
  { prom: 'resilix_quota_waiting', otel: 'resilix.quota.waiting', kind: 'updown', unit: '{call}', labels: [], help: 'Calls waiting for budget', read: quota((q, out) => out({}, q.waiting)) },
  { prom: 'resilix_quota_cooldown_seconds', otel: 'resilix.quota.cooldown', kind: 'gauge', unit: 's', labels: [], help: 'How long the key still cools down after a 429', read: quota((q, out) => out({}, q.coolingMs / 1000)) },
  { prom: 'resilix_quota_cooldowns_total', otel: 'resilix.quota.cooldowns', kind: 'counter', unit: '{cooldown}', labels: [], help: 'Cooldowns begun (a 429 or a Retry-After)', read: quota((q, out) => out({}, q.cooldowns)) },
  {
    prom: 'resilix_quota_store_state',
    otel: 'resilix.quota.store.state',
    kind: 'updown',
    unit: '{store}',
    labels: ['state'],
    help: 'The shared quota store state: 1 for the current state of each key, 0 for the others',
    read: store((st, out) => {
      for (const state of STORE_STATES) out({ state }, st.state === state ? 1 : 0)
    }),
  },
  { prom: 'resilix_quota_store_errors_total', otel: 'resilix.quota.store.errors', kind: 'counter', unit: '{error}', labels: [], help: 'Store requests that failed', read: store((st, out) => out({}, st.errors)) },
  { prom: 'resilix_quota_store_fallbacks_total', otel: 'resilix.quota.store.fallbacks', kind: 'counter', unit: '{fallback}', labels: [], help: 'Times the store failed and the key fell back to a local share, or refused', read: store((st, out) => out({}, st.fallbacks)) },
  { prom: 'resilix_quota_store_leases_total', otel: 'resilix.quota.store.leases', kind: 'counter', unit: '{lease}', labels: [], help: 'Leases asked of the store', read: store((st, out) => out({}, st.leases)) },
  { prom: 'resilix_quota_store_latency_seconds', otel: 'resilix.quota.store.latency', kind: 'gauge', unit: 's', labels: [], help: 'The store round trip, smoothed', read: store((st, out) => out({}, st.latencyMs / 1000)) },
]

module.exports = { SERIES, ATTRIBUTES }
