// CPU ns per awaited execute() of an async function returning at once: the price of a call
// that names no option (ADR 1200). Minimum of 5 runs of 200 000 calls after 50 000 to warm up.
//
//   node benches/node/plain-execute.mjs [checkout dir] ['{"breaker":false}']
//
// Run it for two checkouts in turn, fresh processes alternating, and compare the minima.
import { createRequire } from 'node:module'
import { resolve } from 'node:path'

const dir = resolve(process.argv[2] ?? '.')
const { Resilix } = createRequire(import.meta.url)(resolve(dir, 'index.js'))
const rx = new Resilix(JSON.parse(process.argv[3] ?? '{"breaker":false}'))
const fn = async () => 1
async function run(n) {
  for (let i = 0; i < n; i++) await rx.execute(fn)
}
await run(50_000)
let best = Infinity
for (let r = 0; r < 5; r++) {
  const t = process.cpuUsage()
  await run(200_000)
  const u = process.cpuUsage(t)
  best = Math.min(best, ((u.user + u.system) * 1000) / 200_000)
}
console.log(best.toFixed(1))
rx.close()
