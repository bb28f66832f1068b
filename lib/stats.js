'use strict'
// stats() as the public API reports it: the binding's object in the documented shape.

function keyStats(key, s) {
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
    retries: s.retries,
    retryBudgetRefusals: s.retryBudgetRefusals,
  }
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
