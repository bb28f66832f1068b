'use strict'
// "Did you mean …?" for an unknown option: first the names other libraries give the same thing
// (opossum, cockatiel, p-limit, undici), then near-misses of the known names. Only ever
// computed on the way to an error (ADR 0808).

/**
 * Other libraries' option names, by where they were written: what resilix calls them, and a
 * note where the meaning differs.
 */
const ALIASES = {
  '': {
    timeout: ['timeoutMs'],
    resetTimeout: ['breaker.openMs', "opossum's resetTimeout"],
    halfOpenAfter: ['breaker.openMs', "cockatiel's halfOpenAfter"],
    errorThresholdPercentage: ['breaker.failureRate', 'a fraction: 50 % is 0.5'],
    volumeThreshold: ['breaker.minimumCalls'],
    rollingCountTimeout: ['breaker.windowMs'],
    capacity: ['bulkhead.maxConcurrent', 'or let the adaptive limiter set the concurrency'],
    maxConcurrent: ['bulkhead.maxConcurrent'],
    concurrency: ['initialLimit', "with algorithm: 'fixed' for a limit that never moves"],
    limit: ['initialLimit'],
    key: ['execute(fn, { key })', 'the key is an option of each call'],
    signal: ['execute(fn, { signal })', 'the signal is an option of each call'],
  },
  'breaker.': {
    resetTimeout: ['breaker.openMs', "opossum's resetTimeout"],
    halfOpenAfter: ['breaker.openMs', "cockatiel's halfOpenAfter"],
    errorThresholdPercentage: ['breaker.failureRate', 'a fraction: 50 % is 0.5'],
    threshold: ['breaker.failureRate'],
    volumeThreshold: ['breaker.minimumCalls'],
    rollingCountTimeout: ['breaker.windowMs'],
    duration: ['breaker.windowMs'],
    timeout: ['timeoutMs', 'a top-level option: the deadline of each call'],
  },
  'queue.': {
    size: ['queue.maxFactor', 'the queue is bounded by factors of the limit, not by a size'],
    maxSize: ['queue.maxFactor', 'the queue is bounded by factors of the limit, not by a size'],
  },
  call: {
    timeout: ['timeoutMs'],
    abortSignal: ['signal'],
  },
  interceptor: {
    timeout: ['timeoutMs'],
    headersTimeout: ['timeoutMs', 'it runs to the response headers, queue wait included'],
    bodyTimeout: ['bodyTimeoutMs'],
  },
}

/** Edit distance, for near-misses (two short strings: a plain table). */
function distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = row
  }
  return prev[b.length]
}

/**
 * `': did you mean X?'` for an unknown option `name` written where `known` are the options
 * (`where`: '' top-level, 'breaker.', 'queue.', 'call', 'interceptor'), or '' with no guess.
 * `elsewhere`: `{ name: 'breaker.name' }` for options that belong one level down.
 */
function didYouMean(name, known, where, elsewhere) {
  const table = ALIASES[where]
  if (table !== undefined && Object.hasOwn(table, name)) {
    const [better, note] = table[name]
    return `: did you mean ${better}?` + (note === undefined ? '' : ` (${note})`)
  }
  if (elsewhere !== undefined && Object.hasOwn(elsewhere, name)) return `: did you mean ${elsewhere[name]}?`
  const prefix = where.endsWith('.') ? where : ''
  let best
  let bestD = Infinity
  for (const k of known) {
    const d = k.toLowerCase() === name.toLowerCase() ? 0 : distance(k, name)
    if (d < bestD) {
      best = k
      bestD = d
    }
  }
  // Up to 2 edits for names of 5 letters or more (a transposition is two), 1 for shorter ones.
  return best !== undefined && bestD <= (name.length >= 5 ? 2 : 1) ? `: did you mean ${prefix}${best}?` : ''
}

module.exports = { didYouMean }
