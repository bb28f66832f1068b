// Shared test helpers. Real time is used sparingly: short sleeps with wide margins, so that the
// tests do not flake on a busy 2-core machine.
import { afterEach } from 'node:test'
import { execFile } from 'node:child_process'
import { Resilix } from '../index.js'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * Runs `node ...args` in a fresh child (`options` as execFile's) and resolves with the last line
 * of its stdout, parsed: the measurements a fixture prints. Rejects with its stderr.
 */
export function childJson(args, options) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, options, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`))
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)))
    })
  })
}

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

const alive = new Set()
/**
 * Keeps the event loop alive while a test waits on an unref'd deadline only. The interval ends
 * with the test even when an assertion throws before the test's own stop(): a leftover interval
 * would keep the file's process alive and hang the whole run (a CI run once timed out so).
 */
export function keepAlive() {
  const t = setInterval(() => {}, 1000)
  alive.add(t)
  return () => {
    clearInterval(t)
    alive.delete(t)
  }
}
afterEach(() => {
  for (const t of alive) clearInterval(t)
  alive.clear()
})
