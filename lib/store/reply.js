'use strict'
// The lease script's reply, checked before any of it is used (ADR 1106): a client, proxy or
// wrapper may resolve with anything, and a reply the script cannot have produced is a store
// error, never a crash or a key left waiting on a lease that is not coming.

/** What is wrong with `r` as the reply to a lease for `n` budgets, or null: nothing. */
function checkLease(r, n) {
  const want = 5 + 3 * n
  if (!Array.isArray(r)) return `the store replied ${shown(r)}, not the lease script's list of ${want} values`
  if (r.length !== want) return `the store replied a list of ${r.length} values, not the lease script's ${want}`
  if (typeof r[0] !== 'string' || !/^\d{1,20}\.\d{1,20}$/.test(r[0])) return `the store replied ${shown(r[0])} as the window's generation, not the lease script's "seconds.microseconds"`
  for (let i = 1; i < want; i++) {
    // An integer, or its decimal text (ioredis's stringNumbers option).
    const v = typeof r[i] === 'string' && /^-?\d{1,16}$/.test(r[i]) ? Number(r[i]) : r[i]
    // A field and a sum may be any integer; every other value is a count, a duration or a grant.
    const signed = i >= 5 && (i - 5) % 3 !== 0
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || (!signed && v < 0) || (i === 1 && v < 1)) {
      return `the store replied ${shown(r[i])} as value ${i + 1} of the lease, not what the lease script returns there`
    }
  }
  return null
}

function shown(v) {
  if (v === null || v === undefined) return String(v)
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
  if (typeof v === 'number') return String(v)
  if (Array.isArray(v)) return `a list of ${v.length} values`
  return `a value of type ${typeof v}`
}

module.exports = { checkLease }
