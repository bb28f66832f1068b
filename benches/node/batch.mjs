// A batch of 10 000 calls fired at once through resilix, p-limit and cockatiel's bulkhead with a
// queue, against a healthy upstream (an async fn of a few ms, 20 at a time): wall time to drain,
// CPU time, and the heap that the waiting batch holds.
//
//   node --expose-gc benches/node/batch.mjs [--n 10000] [--fn-ms 5] [--concurrency 20] [--rounds 5]
//
// Per round every contender runs once, in rotating order, on a fresh instance (a new key for
// resilix). Time rounds: the wall and CPU time from the first call fired to the last answer.
// Memory rounds (after the time rounds): gc() before, then gc() right after the batch is fired
// (all of it pending: `concurrency` running, the rest waiting) gives the heap the batch holds;
// gc() once it is answered gives what stays. Medians over the rounds.
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadResilix } from './contenders.mjs'

const { values: opt } = parseArgs({
  options: {
    n: { type: 'string', default: '10000' },
    'fn-ms': { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '5' },
  },
})
const N = Number(opt.n)
const FN_MS = Number(opt['fn-ms'])
const C = Number(opt.concurrency)
const ROUNDS = Number(opt.rounds)
const { gc } = globalThis
if (typeof gc !== 'function') throw new Error('run with node --expose-gc')

const upstream = () => sleep(FN_MS)
const Resilix = loadResilix()

/** `make()`: a fresh instance's `run(fn)`, returning the promise of one protected call. */
const contenders = [
  {
    name: `resilix, defaults${C === 20 ? '' : ` + initialLimit ${C}`} (adaptive limit from ${C})`,
    make: async () => {
      const rx = new Resilix(C === 20 ? {} : { initialLimit: C })
      return (fn) => rx.execute(fn, { key: 'api' })
    },
  },
  {
    name: `resilix, algorithm fixed, limit ${C}`,
    make: async () => {
      const rx = new Resilix({ algorithm: 'fixed', initialLimit: C })
      return (fn) => rx.execute(fn, { key: 'api' })
    },
  },
  {
    name: `p-limit(${C})`,
    make: async () => {
      const { default: pLimit } = await import('p-limit')
      const limit = pLimit(C)
      return (fn) => limit(fn)
    },
  },
  {
    name: `cockatiel bulkhead(${C}, ${N})`,
    make: async () => {
      const { bulkhead } = await import('cockatiel')
      const b = bulkhead(C, N)
      return (fn) => b.execute(fn)
    },
  },
]

const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1]

/** Fires the batch; `onFired()` runs once every call is pending. Resolves to the refusals. */
async function fire(run, onFired) {
  const ps = new Array(N)
  for (let i = 0; i < N; i++) ps[i] = run(upstream)
  onFired?.()
  const outs = await Promise.allSettled(ps)
  return outs.filter((o) => o.status === 'rejected').length
}

async function timeRound(c) {
  const run = await c.make()
  gc()
  const cpu0 = cpuMs()
  const t0 = performance.now()
  const refused = await fire(run)
  return { wall: performance.now() - t0, cpu: cpuMs() - cpu0, refused }
}

async function memoryRound(c) {
  const run = await c.make()
  gc()
  gc()
  const base = process.memoryUsage().heapUsed
  let held = 0
  await fire(run, () => {
    gc()
    held = process.memoryUsage().heapUsed - base
  })
  gc()
  gc()
  return { held, retained: process.memoryUsage().heapUsed - base }
}

// Warm-up: one small batch each, so that no contender pays for loading or the JIT in round 1.
for (const c of contenders) {
  const run = await c.make()
  await Promise.all(Array.from({ length: 1000 }, () => run(upstream)))
}

const rows = contenders.map(() => ({ wall: [], cpu: [], refused: 0, held: [], retained: [] }))
for (let r = 0; r < ROUNDS; r++) {
  for (let k = 0; k < contenders.length; k++) {
    const i = (r + k) % contenders.length
    const m = await timeRound(contenders[i])
    rows[i].wall.push(m.wall)
    rows[i].cpu.push(m.cpu)
    rows[i].refused += m.refused
  }
}
for (let r = 0; r < Math.max(3, ROUNDS - 2); r++) {
  for (let k = 0; k < contenders.length; k++) {
    const i = (r + k) % contenders.length
    const m = await memoryRound(contenders[i])
    rows[i].held.push(m.held)
    rows[i].retained.push(m.retained)
  }
}

const ideal = (N * FN_MS) / C
console.log(`batch of ${N} at once, fn = ${FN_MS} ms sleep, ${C} at a time (ideal ${ideal.toFixed(0)} ms at ${C}); Node ${process.version}; medians of ${ROUNDS} rounds (memory: ${Math.max(3, ROUNDS - 2)})`)
console.log()
console.log('| contender | wall ms | CPU ms | heap held by the pending batch | per call | retained after | refused |')
console.log('|---|--:|--:|--:|--:|--:|--:|')
for (let i = 0; i < contenders.length; i++) {
  const r = rows[i]
  const held = median(r.held)
  console.log(
    `| ${contenders[i].name} | ${median(r.wall).toFixed(0)} | ${median(r.cpu).toFixed(0)} | ${(held / 2 ** 20).toFixed(2)} MiB | ${(held / N).toFixed(0)} B | ${(median(r.retained) / 1024).toFixed(0)} KiB | ${r.refused} |`,
  )
}
