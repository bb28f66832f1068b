// fetch through resilix: one key per upstream host, a deadline that aborts the request, and
// every outcome classified from the Response's status (2xx success, 429/503 overload, other
// 4xx answered, 5xx failure). Runs against a local server it starts itself.
//   node examples/fetch.mjs
import http from 'node:http'
import { Resilix, isRejectedError, isTimeoutError } from 'resilix' // resolves to this repository (package self-reference)

// A local upstream: /slow takes 10 s, /busy answers 429, /missing 404, anything else 200 JSON.
const server = http.createServer((req, res) => {
  if (req.url === '/slow') return setTimeout(() => res.end('late'), 10_000).unref()
  if (req.url === '/busy') return res.writeHead(429, { 'retry-after': '1' }).end()
  if (req.url === '/missing') return res.writeHead(404).end()
  res.setHeader('content-type', 'application/json')
  setTimeout(() => res.end(JSON.stringify({ path: req.url, at: Date.now() })), 20)
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${server.address().port}`

// Every call: a 2 s deadline, queue wait included (room for a busy machine; /slow still misses it).
const rx = new Resilix({ timeoutMs: 2000 })

async function get(path) {
  const url = new URL(path, base)
  return rx.execute(
    async (ctx) => {
      // ctx.signal aborts at the deadline: fetch stops and the slot is freed.
      const res = await fetch(url, { signal: ctx.signal })
      ctx.mark() // headers arrived: the limiter's latency sample ends here
      return res // resilix reads res.status to classify the call
    },
    { key: url.host }, // one key per upstream host
  )
}

// Ten calls in parallel, then one of each kind of outcome.
const ok = await Promise.all(Array.from({ length: 10 }, (_, i) => get(`/items/${i}`).then((r) => r.json())))
console.log(`10 parallel calls ok, e.g. ${JSON.stringify(ok[0])}`)
for (const path of ['/busy', '/missing', '/slow']) {
  try {
    const res = await get(path)
    console.log(`${path}: HTTP ${res.status}`) // a 429 or 404 is a result, not an error
    await res.arrayBuffer()
  } catch (err) {
    if (isTimeoutError(err)) console.log(`${path}: timed out after ${err.timeoutMs} ms (queued: ${err.queued})`)
    else if (isRejectedError(err)) console.log(`${path}: refused by resilix (${err.reason})`)
    else throw err
  }
}

// The caller got its TimeoutError at the deadline; the slot is freed a moment later, when the
// aborted fetch itself settles (resilix counts a call in flight until fn really ends).
await new Promise((r) => setTimeout(r, 20))
const s = rx.stats(new URL(base).host)
console.log(`key ${s.key}: limit ${s.limit}, inflight ${s.inflight}, breaker ${s.breaker}`)
console.log('verdicts', s.verdicts)
server.close()
server.closeAllConnections()
