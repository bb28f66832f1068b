// What a limiter-only call (`breaker: false`) costs, part by part, against what a JS counter
// costs (ADR 1218). One process, the parts interleaved, CPU time, minimum over the rounds:
//   node benches/node/fast-path-floor.mjs [--rounds 7] [--n 300000]
// Parts: the bare awaited call; cockatiel's bulkhead; the cheapest async wrapper a policy can
// put around fn; one native crossing with its clock read (acquire of no key); the native
// acquire+settle pair alone, and with acquire's answer through the clock cell; the cheapest wrapper holding that pair; resilix's execute; and
// the JS clocks a crossing-free admission would need instead (Date.now, performance.now).
import { createRequire } from 'node:module'
import { parseArgs } from 'node:util'

const require = createRequire(import.meta.url)
const { values: opt } = parseArgs({ options: { rounds: { type: 'string' }, n: { type: 'string' } } })
const ROUNDS = Number(opt.rounds ?? 7)
const N = Number(opt.n ?? 300_000)
const { Resilix } = require('../../index.js')
const { native, clockCell } = require('../../lib/native.js')
const cockatiel = require('cockatiel')

const rx = new Resilix({ breaker: false, initialLimit: 100 })
await rx.execute(async () => 1)
const h = rx._keys.get('default').handle
const bulkhead = cockatiel.bulkhead(100)
const work = async () => 1
const wrap = async (f) => {
  const v = await f()
  return v
}
const wrapPair = async (f) => {
  const p = native.acquire(h)
  const v = await f()
  native.settle(h, p, 0)
  return v
}
let sink = 0

// Each part is its own function, so that every loop sees one callee only.
const parts = {
  'bare await': async () => {
    for (let i = 0; i < N; i++) await work()
  },
  'cockatiel bulkhead': async () => {
    for (let i = 0; i < N; i++) await bulkhead.execute(work)
  },
  'async wrapper': async () => {
    for (let i = 0; i < N; i++) await wrap(work)
  },
  'async wrapper + native pair': async () => {
    for (let i = 0; i < N; i++) await wrapPair(work)
  },
  'resilix execute': async () => {
    for (let i = 0; i < N; i++) await rx.execute(work)
  },
  'native pair (sync)': async () => {
    for (let i = 0; i < N; i++) sink += native.settle(h, native.acquire(h), 0)
  },
  'native pair, acquire through the cell (sync)': async () => {
    for (let i = 0; i < N; i++) {
      native.acquireToCell(h)
      sink += native.settle(h, clockCell[11], 0)
    }
  },
  'one crossing + clock read': async () => {
    for (let i = 0; i < N; i++) sink += native.acquire(-1)
  },
  'Date.now()': async () => {
    for (let i = 0; i < N; i++) sink += Date.now()
  },
  'performance.now()': async () => {
    for (let i = 0; i < N; i++) sink += performance.now()
  },
}

const cpuNs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) * 1e3
}
const best = {}
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, f] of Object.entries(parts)) {
    const t = cpuNs()
    await f()
    best[name] = Math.min(best[name] ?? Infinity, (cpuNs() - t) / N)
  }
}
const bare = best['bare await']
console.log(`Node ${process.version}; CPU ns per call, min of ${ROUNDS} interleaved rounds of ${N}`)
if (sink === 0.5) console.log('') // keeps the loops' results alive
for (const [name, ns] of Object.entries(best)) {
  const awaited = !name.includes('(sync)') && !['one crossing + clock read', 'Date.now()', 'performance.now()'].includes(name)
  const extra = awaited && name !== 'bare await' ? `   (over bare: ${(ns - bare).toFixed(1)})` : ''
  console.log(`${name.padEnd(46)} ${ns.toFixed(1).padStart(7)}${extra}`)
}
