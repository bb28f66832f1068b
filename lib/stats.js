'use strict'
// stats() as the public API reports it: the binding's object in the documented shape.

/** `quota`: the instance's (lib/quota.js), to name the budgets; null without one. `ks`: the key's KeyState. */
function keyStats(key, s, quota = null, fleet = null, ks = undefined) {
  return {
    key,
    limit: s.limit ?? null,
    inflight: s.inflight,
    queued: s.queued,
    breaker: s.breaker ?? null,
    algorithm: s.algorithm ?? null,
    baselineMs: s.baselineMs,
    smoothedMs: s.smoothedMs,
    windowSamples: s.windowSamples,
    bulkheadActive: s.bulkheadActive,
    lastLatencyMs: s.lastLatencyMs,
    stuck: s.stuck,
    verdicts: s.verdicts,
    rejections: s.rejections,
    queuedByPriority: s.queuedByPriority,
    queueRefusalsByPriority: s.queueRefusalsByPriority,
    tenants: s.tenants,
    throttleProbability: s.throttleProbability,
    retries: s.retries,
    retryBudgetRefusals: s.retryBudgetRefusals,
    retryBodyRefusals: ks?.retryBodyRefusals ?? 0,
    quota: quota === null || s.quota == null ? null : quotaStats(quota, s.quota, fleet),
  }
}

/** `{ budgets: [{ name, windowMs, limit, spent }], waiting, cooldowns, coolingMs, store }`. */
function quotaStats(quota, q, fleet) {
  const budgets = []
  const b = q.budgets
  for (let i = 0; i + 3 < b.length; i += 4) {
    budgets.push({ name: quota.names[b[i]], windowMs: b[i + 3], limit: b[i + 2], spent: b[i + 1] })
  }
  return { budgets, waiting: q.waiting, cooldowns: q.cooldowns, coolingMs: q.coolingMs, store: fleet === null ? null : fleet.stats() }
}

/** `{ [key]: KeyStats }` with every key an own property: `__proto__` included. */
function byKey(keys, statsOf) {
  const all = {}
  for (const k of keys) {
    const s = statsOf(k)
    if (s !== undefined) Object.defineProperty(all, k, { value: s, enumerable: true, writable: true, configurable: true })
  }
  return all
}

module.exports = { keyStats, byKey }
