// `npm run bench`: resilix against its JS peers, in one process, side by side and interleaved.
//
//   1. overhead per call over a bare awaited call (sequential `await`), median of interleaved rounds;
//   2. throughput with 100 concurrent callers;
//   3. heap retained after 1 000 000 calls (needs --expose-gc; `npm run bench` passes it).
//
// Times are the CPU time of this process (process.cpuUsage), not wall time: the machine these
// numbers come from is shared, and time slices lost to other processes are not our cost.
// Set BENCH_WALL=1 to use wall time instead. BENCH_QUICK=1 runs a short smoke version.
// BENCH_BASELINE=/path/to/other/checkout/index.js adds that build's rows, interleaved with
// these (a before/after comparison in one process: across processes a shared VM varies ±30 %).
import { setTimeout as sleep } from 'node:timers/promises'
import { work, RESILIX, PEERS, resilixRun, loadResilix, sequential, concurrent, clock as clockOf } from './contenders.mjs'

const Resilix = loadResilix()

const QUICK = process.env.BENCH_QUICK === '1'
const WALL = process.env.BENCH_WALL === '1'
const ROUNDS = QUICK ? 3 : 7
const SEQ_CALLS = QUICK ? 20_000 : 100_000
const CONCURRENCY = 100
const TPUT_CALLS = QUICK ? 50_000 : 300_000
const HEAP_CALLS = QUICK ? 100_000 : 1_000_000

const nowNs = clockOf(WALL)

const baseline = process.env.BENCH_BASELINE ? loadResilix(process.env.BENCH_BASELINE) : null

/**
 * Each contender: `make()` resolves to `run` for a fresh instance, a function returning the
 * promise of one protected call. `scale` shrinks the call count of very slow contenders.
 */
const rx = (name, options, goal, lib = Resilix) => ({ name, goal, make: async () => resilixRun(lib, options) })
const contenders = [
  { name: 'bare await', make: async () => work },
  rx('resilix full stack (breaker+limiter+bulkhead+timeoutMs)', RESILIX.full, 250),
  rx('resilix limiter only', RESILIX.breakerOff, 150),
  rx('resilix defaults, algorithm fixed', RESILIX.defaultsFixed, 300),
  ...(baseline === null
    ? []
    : [
        rx('BASELINE full stack', RESILIX.full, undefined, baseline),
        rx('BASELINE limiter only', RESILIX.breakerOff, undefined, baseline),
      ]),
  PEERS.cockatielBulkhead,
  PEERS.cockatielBreaker,
  { ...PEERS.cockatielWrap, scale: 1 / 20 },
  PEERS.opossum,
  PEERS.pLimit,
]

const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1]
const calls = (c, n) => Math.max(1000, Math.round(n * (c.scale ?? 1)))

// ---- 1. overhead per call ------------------------------------------------------------------
const runs = await Promise.all(contenders.map((c) => c.make()))
for (let i = 0; i < contenders.length; i++) await sequential(runs[i], calls(contenders[i], SEQ_CALLS) / 5) // warm-up
const perCall = contenders.map(() => [])
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < contenders.length; i++) {
    const n = calls(contenders[i], SEQ_CALLS)
    const t = nowNs()
    await sequential(runs[i], n)
    perCall[i].push((nowNs() - t) / n)
  }
}
const bareRounds = perCall[0]
const overhead = perCall.map((a) => median(a.map((v, r) => v - bareRounds[r])))

// ---- 2. throughput, 100 concurrent callers -------------------------------------------------
const tput = contenders.map(() => [])
const rejections = contenders.map(() => 0)
for (let r = 0; r < Math.max(3, ROUNDS - 2); r++) {
  for (let i = 0; i < contenders.length; i++) {
    const n = calls(contenders[i], TPUT_CALLS)
    const t = nowNs()
    rejections[i] += await concurrent(runs[i], n, CONCURRENCY)
    tput[i].push(n / ((nowNs() - t) / 1e9))
  }
}

// ---- 3. heap retained after 1 000 000 calls ------------------------------------------------
const heap = contenders.map(() => NaN)
if (typeof globalThis.gc === 'function') {
  const settle = async () => {
    // Let unref'd timers and finalizers run, then collect twice.
    await sleep(10)
    globalThis.gc()
    globalThis.gc()
  }
  for (let i = 0; i < contenders.length; i++) {
    const run = await contenders[i].make()
    await concurrent(run, 2000, CONCURRENCY)
    await settle()
    const before = process.memoryUsage().heapUsed
    await concurrent(run, HEAP_CALLS, CONCURRENCY)
    await settle()
    heap[i] = process.memoryUsage().heapUsed - before
    // `run` (and the instance it closes over) is alive until here.
    if (typeof run !== 'function') console.log(run)
  }
}

// ---- report --------------------------------------------------------------------------------
const clock = WALL ? 'wall' : 'CPU'
console.log(`resilix node bench: Node ${process.version}, ${clock} time, ${ROUNDS} interleaved rounds`)
console.log(`  per call: ${SEQ_CALLS} sequential awaited calls per round (cockatiel wrap: ${calls(contenders.find((c) => c.scale), SEQ_CALLS)})`)
console.log(`  throughput: ${CONCURRENCY} concurrent callers, ${TPUT_CALLS} calls per round`)
console.log(`  heap: retained after ${HEAP_CALLS} calls, ${CONCURRENCY} concurrent callers, after gc()${heap.every(Number.isNaN) ? ' (skipped: run with --expose-gc)' : ''}`)
console.log('')
const rows = [['contender', 'ns/call', 'overhead ns', 'goal', 'calls/s @100', 'rejected', 'heap retained']]
for (let i = 0; i < contenders.length; i++) {
  const c = contenders[i]
  rows.push([
    c.name,
    median(perCall[i]).toFixed(0),
    i === 0 ? '—' : overhead[i].toFixed(0),
    c.goal ? `≤ ${c.goal}` : '',
    `${(median(tput[i]) / 1e6).toFixed(2)} M`,
    String(rejections[i]),
    Number.isNaN(heap[i]) ? 'n/a' : `${(heap[i] / 1024).toFixed(0)} KiB`,
  ])
}
const widths = rows[0].map((_, j) => Math.max(...rows.map((r) => r[j].length)))
for (const [k, r] of rows.entries()) {
  console.log('| ' + r.map((v, j) => (j === 0 ? v.padEnd(widths[j]) : v.padStart(widths[j]))).join(' | ') + ' |')
  if (k === 0) console.log('|' + widths.map((w, j) => (j === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
}
const opossum = overhead[contenders.findIndex((c) => c.name.startsWith('opossum'))]
const plimit = overhead[contenders.findIndex((c) => c.name.startsWith('p-limit'))]
console.log('')
console.log(`full stack / opossum overhead: ${(overhead[1] / opossum).toFixed(2)} (goal ≤ 0.5); limiter only vs p-limit: ${overhead[2].toFixed(0)} vs ${plimit.toFixed(0)} ns (goal: below)`)
