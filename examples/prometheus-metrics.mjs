// resilix/prometheus with prom-client: one instance's calls and state on a /metrics endpoint,
// scraped once after some traffic.
//   node examples/prometheus-metrics.mjs   (needs prom-client)
//
// In your app:
//   import { instrument } from 'resilix/prometheus'
//   instrument(rx)   // into prom-client's global register, which your /metrics serves
import http from 'node:http'
import client from 'prom-client'
import { Resilix } from 'resilix' // resolves to this repository (package self-reference)
import { instrument } from 'resilix/prometheus'

// A local upstream: 10 ms per request; /missing answers 404, /fail 500.
const upstream = http.createServer((req, res) => {
  const status = req.url === '/missing' ? 404 : req.url === '/fail' ? 500 : 200
  setTimeout(() => res.writeHead(status).end(), 10)
})
await new Promise((r) => upstream.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${upstream.address().port}`

const rx = new Resilix({ timeoutMs: 1000 })
const metrics = instrument(rx) // prom-client's global register

// The app's /metrics endpoint, as Prometheus scrapes it.
const app = http.createServer(async (req, res) => {
  res.writeHead(200, { 'content-type': client.register.contentType }).end(await client.register.metrics())
})
await new Promise((r) => app.listen(0, '127.0.0.1', r))

const get = (path) =>
  rx.execute(async (ctx) => {
    const res = await fetch(base + path, { signal: ctx.signal })
    ctx.mark()
    await res.arrayBuffer()
    if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status })
    return res
  }, { key: 'catalog.example' }).catch(() => {})

await Promise.all([...Array(40)].map((_, i) => get(i % 10 === 0 ? '/missing' : i % 13 === 0 ? '/fail' : '/items')))

const scraped = await (await fetch(`http://127.0.0.1:${app.address().port}/metrics`)).text()
for (const line of scraped.split('\n')) {
  // The counts, sums and gauges; the buckets make the full text long.
  if (/^resilix_/.test(line) && !/_bucket\{/.test(line)) console.log(line)
}
metrics.dispose()
app.close()
upstream.close()
upstream.closeAllConnections()
