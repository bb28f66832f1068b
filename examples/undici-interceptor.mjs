// Every fetch in the process through resilix, with no change at the call sites: the undici
// interceptor on the global dispatcher. Each request is keyed by its origin, its latency is
// marked at the response headers (an event stream's at its first event), and its slot is held
// until its body ends. Runs against a local server it starts itself.
//   node examples/undici-interceptor.mjs
import http from 'node:http'
import { Agent, setGlobalDispatcher } from 'undici'
import { Resilix, findRejectedError, findTimeoutError } from 'resilix' // resolves to this repository (package self-reference)
import { interceptor } from 'resilix/undici'

// A local upstream: /busy answers 503, /slow takes 2 s, /events streams server-sent events as an
// LLM does (the headers at once, the first token 300 ms later, then one every 50 ms), /report
// is a large body, anything else a small JSON document.
const server = http.createServer((req, res) => {
  if (req.url === '/busy') return res.writeHead(503).end()
  if (req.url === '/slow') return setTimeout(() => res.end('late'), 10_000).unref()
  if (req.url === '/events') {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.flushHeaders()
    let n = 0
    let tick
    const first = setTimeout(() => {
      res.write(`data: token ${n++}\n\n`)
      tick = setInterval(() => res.write(`data: token ${n++}\n\n`), 50)
    }, 300)
    return req.on('close', () => {
      clearTimeout(first)
      clearInterval(tick)
    })
  }
  if (req.url === '/report') return res.end(Buffer.alloc(8 * 1024 * 1024, 'x'))
  res.setHeader('content-type', 'application/json')
  setTimeout(() => res.end(JSON.stringify({ path: req.url })), 10)
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${server.address().port}`

const rx = new Resilix({ timeoutMs: 3000 }) // deadline to the response headers (a stream's first event), queue wait included
setGlobalDispatcher(new Agent().compose(interceptor(rx, { bodyTimeoutMs: 1000 })))
// A dispatcher of its own for calls with a tighter deadline (same rx: same key, same limit).
const tight = new Agent().compose(interceptor(rx, { timeoutMs: 2000 }))

// Plain fetch from here on.
const results = await Promise.all(Array.from({ length: 10 }, (_, i) => fetch(`${base}/items/${i}`).then((r) => r.json())))
console.log(`10 parallel fetches ok (${results.length} documents)`)

const busy = await fetch(`${base}/busy`)
console.log(`/busy: HTTP ${busy.status}, a response as always (resilix counts it as overload)`)
await busy.body?.cancel()

try {
  await fetch(`${base}/slow`, { dispatcher: tight })
} catch (err) {
  const late = findTimeoutError(err) // fetch's TypeError; the TimeoutError is its cause
  if (late) console.log(`/slow: timed out after ${late.timeoutMs} ms (fetch's TypeError, cause TimeoutError)`)
  else throw err
}

// A stream holds its slot for as long as it is read, past the 2 s deadline (which bounds the
// wait for its first event, not its length). Its latency sample is the time to that event.
const stream = await fetch(`${base}/events`, { dispatcher: tight })
const reader = stream.body.getReader()
let tokens = 0
const started = Date.now()
while (Date.now() - started < 2500) tokens += new TextDecoder().decode((await reader.read()).value).split('\n\n').length - 1
console.log(`/events: ${tokens} tokens in 2.5 s, slots in flight while streaming: ${rx.stats(base).inflight}`)
await reader.cancel()
console.log(`/events: latency sample ${Math.round(rx.stats(base).lastLatencyMs)} ms, the time to the first token (its headers came at once)`)

// A body nobody reads is aborted once it has delivered nothing for bodyTimeoutMs.
const unread = await fetch(`${base}/report`)
console.log(`/report: HTTP ${unread.status}, body left unread, in flight: ${rx.stats(base).inflight}`)
const t0 = Date.now()
while (rx.stats(base).inflight > 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20))
console.log(`/report: slot freed after ${Math.round((Date.now() - t0) / 100) / 10} s without a reader`)

// Refusals reach fetch as the cause of its TypeError.
const strict = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false })
setGlobalDispatcher(new Agent().compose(interceptor(strict)))
const holder = await fetch(`${base}/events`)
try {
  await fetch(`${base}/items/x`)
} catch (err) {
  const refused = findRejectedError(err)
  if (refused) console.log(`second call at limit 1: refused by resilix (${refused.reason})`)
  else throw err
}
await holder.body.cancel()

const s = rx.stats(base)
console.log(`key ${s.key}: limit ${s.limit}, inflight ${s.inflight}`)
console.log('verdicts', s.verdicts)
server.close()
server.closeAllConnections()
