// Attributes the cost of one hot-path crossing: the napi-derive wrapper, catch_unwind, the
// clock, the engine table, the engine's work. Needs the addon built with `--features probes`:
//   npx napi build --platform --release --features probes --output-dir target/probes
//   node benches/node/napi-probes.mjs target/probes/resilix.linux-x64-gnu.node
// Interleaved rounds; prints the median ns per call of each probe.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const path = process.argv[2]
if (!path) {
  console.error('usage: node benches/node/napi-probes.mjs <addon built with --features probes>')
  process.exit(2)
}
const n = require(path)
if (typeof n.pNoop !== 'function') {
  console.error(`${path} was not built with --features probes`)
  process.exit(2)
}
const id = n.createEngine({ breaker: false, limiter: true, algorithm: 'fixed', initialLimit: 1000 }, 1)
// Key handle: engine id × 2^41 + key handle.
const h = n.resolveKey(id, 'k')
const hs = n.resolveKey(id, 's')
const N = Number(process.env.PROBE_N ?? 2e6)
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 7)

let sink = 0
// CPU time of this process, not wall time: the machine is shared, and time slices lost to other
// processes must not count as cost.
function cpuNs() {
  const u = process.cpuUsage()
  return (u.user + u.system) * 1000
}
const probes = {
  'empty loop': (c) => { for (let i = 0; i < c; i++) sink += i },
  'raw N-API noop(f64)': (c) => { for (let i = 0; i < c; i++) sink += n.pRawNoop(i) },
  'derive noop(f64), catch_unwind': (c) => { for (let i = 0; i < c; i++) sink += n.pNoop(i) },
  'derive noop(f64), no catch_unwind': (c) => { for (let i = 0; i < c; i++) sink += n.pNoopNocatch(i) },
  'derive noop(f64, f64, u32)': (c) => { for (let i = 0; i < c; i++) sink += n.pNoop3(i, 1, 0) },
  'clock read (Instant)': (c) => { for (let i = 0; i < c; i++) sink += n.pClock(i) },
  'clock read (libc clock_gettime)': (c) => { for (let i = 0; i < c; i++) sink += n.pClockLibc(i) },
  'clock read (rdtsc)': (c) => { for (let i = 0; i < c; i++) sink += n.pClockTsc(i) },
  'engine table lookup': (c) => { for (let i = 0; i < c; i++) sink += n.pTable(h) },
  'acquire+settle, no clock': (c) => {
    for (let i = 0; i < c; i++) { const p = n.pAcquireNoclock(h); sink += n.pSettleNoclock(h, p, 0) }
  },
  'acquire+settle, napi-derive wrappers': (c) => {
    for (let i = 0; i < c; i++) { const p = n.pAcquireDerive(hs); sink += n.pSettleDerive(hs, p, 0) }
  },
  'acquire+settle (shipped, raw N-API)': (c) => {
    for (let i = 0; i < c; i++) { const p = n.acquire(hs); sink += n.settle(hs, p, 0) }
  },
  'performance.now() (JS)': (c) => { for (let i = 0; i < c; i++) sink += performance.now() },
}
const names = Object.keys(probes)
const results = Object.fromEntries(names.map((k) => [k, []]))
for (const k of names) probes[k](N / 10) // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (const k of names) {
    const t = cpuNs()
    probes[k](N)
    results[k].push((cpuNs() - t) / N)
  }
}
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1]
console.log(`napi probes: ${N} calls × ${ROUNDS} interleaved rounds, median CPU ns per call (Node ${process.version})`)
for (const k of names) console.log(`${k.padEnd(36)} ${median(results[k]).toFixed(1).padStart(7)}  (min ${Math.min(...results[k]).toFixed(1)})`)
if (sink === 0.5) console.log(sink)
