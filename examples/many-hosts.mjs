// Per-host keys for many upstreams: one Resilix instance, one key per host, each with its own
// limit, queue and breaker. A slow host queues and sheds on its own; a failing host's breaker
// opens; the healthy host never notices either. Without per-host keys, one slow host would
// fill a shared limit and starve the others (opossum #321: one breaker for all routes). Starts three local upstreams itself.
//   node examples/many-hosts.mjs
import http from 'node:http'
import { Resilix, isRejectedError, isTimeoutError } from 'resilix' // resolves to this repository (package self-reference)

/** A local upstream serving `capacity` requests at once, each in `ms`; `failRate` answer 500. */
async function upstream(name, { capacity, ms, failRate = 0 }) {
  let busy = 0
  const fifo = []
  const next = () => {
    while (busy < capacity && fifo.length) {
      const res = fifo.shift()
      busy++
      setTimeout(() => {
        busy--
        if (Math.random() < failRate) res.writeHead(500).end('boom')
        else res.end(name)
        next()
      }, ms)
    }
  }
  const server = http.createServer((req, res) => {
    fifo.push(res)
    next()
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return { name, server, url: `http://127.0.0.1:${server.address().port}/` }
}

const hosts = await Promise.all([
  upstream('api', { capacity: 16, ms: 20 }), // healthy
  upstream('search', { capacity: 2, ms: 150 }), // slow and narrow: queues, sheds, times out
  upstream('billing', { capacity: 8, ms: 10, failRate: 0.9 }), // failing: its breaker opens
])

// Keys may come from untrusted input (URL hosts): maxKeys bounds memory whatever arrives.
const rx = new Resilix({ timeoutMs: 800, maxKeys: 100, breaker: { minimumCalls: 10, openMs: 5000 } })
const tally = {}
rx.onBreakerStateChange((e) => console.log(`breaker of ${e.key}: ${e.previous} → ${e.state}`))

async function call(url) {
  const key = new URL(url).host // one key per upstream host
  let outcome
  try {
    const res = await rx.execute(async (ctx) => fetch(url, { signal: ctx.signal }), { key })
    await res.arrayBuffer()
    outcome = res.ok ? 'ok' : `http ${res.status}`
  } catch (err) {
    outcome = isRejectedError(err) ? `refused (${err.reason})` : isTimeoutError(err) ? 'timeout' : 'error'
  }
  const t = (tally[key] ??= {})
  t[outcome] = (t[outcome] || 0) + 1
}

// 1.5 s of traffic: every 10 ms, one call to each host.
const until = Date.now() + 1500
const calls = []
while (Date.now() < until) {
  for (const h of hosts) calls.push(call(h.url))
  await new Promise((r) => setTimeout(r, 10))
}
await Promise.all(calls)

console.log('\nkeys alive:', rx.keys().join(', '))
for (const h of hosts) {
  const key = new URL(h.url).host
  const s = rx.stats(key)
  console.log(`${h.name.padEnd(8)} ${key}  limit ${s.limit}  breaker ${s.breaker.padEnd(9)} outcomes ${JSON.stringify(tally[key])}`)
}
// stats() without a key: every live key at once (what a metrics exporter reads).
console.log(`stats() covers ${Object.keys(rx.stats()).length} keys`)
for (const h of hosts) {
  h.server.close()
  h.server.closeAllConnections() // the slow host still has requests its callers gave up on
}
