// Shared test helpers. Real time is used sparingly: short sleeps with wide margins, so that the
// tests do not flake on a busy 2-core machine.
import { Resilix } from '../index.js'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export function deferred() {
  let resolve, reject
  const promise = new Promise((a, b) => {
    resolve = a
    reject = b
  })
  return { promise, resolve, reject }
}

/** An fn that settles when its signal aborts (as fetch does). */
export const honoursSignal = (ctx) =>
  new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }))

/** A Resilix whose limit never moves: the foundation's tests do not depend on the algorithm. */
export const fixed = (limit = 10, extra = {}) =>
  new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false, ...extra })

/** Keeps the event loop alive while a test waits on an unref'd deadline only. */
export function keepAlive() {
  const t = setInterval(() => {}, 1000)
  return () => clearInterval(t)
}
