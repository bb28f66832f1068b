'use strict'
// Retry-After (RFC 9110): delay-seconds or an HTTP-date, read from what an attempt
// produced: a fetch Response (`headers.get`), an undici result (`headers['retry-after']`), or
// an error that carries either (`err.response`, `err.headers`). The value is untrusted: any
// throw while reading it is no hint.

const SECONDS = /^\s*(\d+)\s*$/

/** The hint in ms (0 for a date in the past), or undefined when there is none or it is invalid. */
function retryAfterOf(x) {
  try {
    const v = headerOf(x)
    return v === undefined ? undefined : parseRetryAfter(v)
  } catch {
    return undefined
  }
}

function headerOf(x) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return undefined
  let v = read(x.headers)
  if (v === undefined) {
    const r = x.response
    if (r !== null && (typeof r === 'object' || typeof r === 'function')) v = read(r.headers)
  }
  return v
}

function read(h) {
  if (h === null || (typeof h !== 'object' && typeof h !== 'function')) return undefined
  let v = typeof h.get === 'function' ? h.get('retry-after') : (h['retry-after'] ?? h['Retry-After'])
  if (Array.isArray(v)) v = v[0]
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined
}

/** A Retry-After value in ms from now; undefined when it is neither form. */
function parseRetryAfter(v, now = Date.now()) {
  const m = SECONDS.exec(v)
  if (m !== null) return Number(m[1]) * 1000
  const t = Date.parse(v)
  if (Number.isNaN(t)) return undefined
  return Math.max(0, t - now)
}

module.exports = { retryAfterOf, parseRetryAfter }
