// execute overhead over a bare awaited call with the fixed limit (CPU time, 9 interleaved
// rounds of 200 000 calls, median). `node benches/node/execute-fixed.mjs`
import { Resilix } from '../../index.js'
const rx = new Resilix({ algorithm: 'fixed', initialLimit: 100, breaker: false })
const rxd = new Resilix({ algorithm: 'fixed', initialLimit: 100 })
const N = 200000
async function bare() { for (let i = 0; i < N; i++) await (async () => 1)() }
async function fx(r) { for (let i = 0; i < N; i++) await r.execute(async () => 1) }
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000 }
const res = { bare: [], fixed: [], fixedBreaker: [] }
for (let round = 0; round < 9; round++) {
  for (const [k, f] of [['bare', bare], ['fixed', () => fx(rx)], ['fixedBreaker', () => fx(rxd)]]) {
    const t = cpu(); await f(); res[k].push((cpu() - t) / N)
  }
}
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1]
console.log(`node ${process.version}: bare ${med(res.bare).toFixed(0)} ns; execute, fixed limit (limiter only): ${(med(res.fixed) - med(res.bare)).toFixed(0)} ns overhead; fixed limit + breaker (defaults): ${(med(res.fixedBreaker) - med(res.bare)).toFixed(0)} ns overhead`)
