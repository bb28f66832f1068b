// `npm run demo` (minimal first version): a local upstream with a concurrency bottleneck,
// traffic through resilix, and what the policies see, printed every second.
import http from 'node:http'
import { Resilix } from '../index.js'

const seconds = Number(process.env.DEMO_SECONDS || 6)
const capacity = 8
let active = 0
const server = http.createServer((req, res) => {
  active++
  // service time grows with queueing beyond `capacity` concurrent requests
  const delay = 20 * Math.max(1, active / capacity)
  setTimeout(() => {
    active--
    res.end('ok')
  }, delay)
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const url = `http://127.0.0.1:${server.address().port}/`

const rx = new Resilix({ timeoutMs: 2000 })
let ok = 0
let shed = 0
let stop = false
async function caller() {
  while (!stop) {
    try {
      await rx.execute(async (ctx) => {
        const r = await fetch(url, { signal: ctx.signal })
        ctx.mark()
        await r.text()
        return r
      }, { key: 'local-upstream' })
      ok++
    } catch {
      shed++
      await new Promise((r) => setTimeout(r, 10))
    }
  }
}
const callers = Array.from({ length: 40 }, caller)
const timer = setInterval(() => {
  const s = rx.stats('local-upstream')
  console.log(`limit ${s.limit}  inflight ${s.inflight}  queued ${s.queued}  ok ${ok}  shed ${shed}  breaker ${s.breaker}  last latency ${s.lastLatencyMs.toFixed(1)} ms`)
}, 1000)
await new Promise((r) => setTimeout(r, seconds * 1000))
stop = true
clearInterval(timer)
await Promise.all(callers)
server.close()
console.log('demo done')
