// A streamed response, as an LLM endpoint streams: server-sent events, the first token after
// about 300 ms, then tokens for a couple of seconds.
//
// **If you stream, you must call `ctx.mark()`, or the limiter will mis-tune.** The limiter
// learns from latency; for a stream the latency that says how loaded the upstream is, is the
// time to the first token, not the length of the completion. mark() ends the sample there.
//
// Pattern shown first: fn waits for the first token, calls ctx.mark(), and returns the stream;
// the caller reads the rest after fn returned. resilix never aborts ctx.signal because fn
// returned, so the body stays readable (cockatiel #72 broke exactly this). The slot is freed
// when fn returns. To keep the slot for the whole stream (bounding concurrent streams), read
// the stream inside fn instead (the second pattern): mark() still ends the latency sample at
// the first token, and the slot is held until the last one.
//   node examples/streaming-sse.mjs
import http from 'node:http'
import { Resilix } from 'resilix' // resolves to this repository (package self-reference)

const TOKENS = 12
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  let i = 0
  const send = () => {
    if (res.destroyed) return
    if (i === TOKENS) return res.end('data: [DONE]\n\n')
    res.write(`data: ${JSON.stringify({ token: `tok${i++} ` })}\n\n`)
    setTimeout(send, 120) // a token every 120 ms: about 1.6 s of streaming
  }
  setTimeout(send, 300) // time to first token
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const url = `http://127.0.0.1:${server.address().port}/v1/completions`
const key = new URL(url).host

/** Yields the data of each server-sent event of a fetch Response. */
async function* events(res) {
  let buf = ''
  for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
    buf += chunk
    let end
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, end)
      buf = buf.slice(end + 2)
      const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n')
      if (data === '[DONE]') return
      yield JSON.parse(data)
    }
  }
}

const rx = new Resilix({ timeoutMs: 5000 }) // the deadline covers fn: here, up to the first token

// Pattern 1: mark at the first token, return the stream, read it after fn returned.
async function complete(prompt) {
  const t0 = performance.now()
  const { first, rest } = await rx.execute(
    async (ctx) => {
      const res = await fetch(url, { method: 'POST', body: prompt, signal: ctx.signal })
      const it = events(res)
      const first = await it.next() // wait for the first token…
      ctx.mark() // …and end the latency sample there
      return { status: res.status, first: first.value, rest: it }
    },
    { key },
  )
  let text = first.token
  for await (const e of rest) text += e.token // read after fn returned: still readable
  return { text, ms: performance.now() - t0 }
}

const results = await Promise.all(['a', 'b', 'c', 'd'].map(complete))
const s1 = rx.stats(key)
console.log(`pattern 1: 4 streams of ${TOKENS} tokens, ${results[0].ms.toFixed(0)} ms each; limiter latency sample ${s1.lastLatencyMs.toFixed(0)} ms (time to first token)`)
console.log(`  text: ${results[0].text.trim()}`)

// Pattern 2: the slot is held for the whole stream; mark() keeps the sample at the first token.
async function completeHeld(prompt, mark) {
  return rx.execute(
    async (ctx) => {
      const res = await fetch(url, { method: 'POST', body: prompt, signal: ctx.signal })
      let text = ''
      for await (const e of events(res)) {
        if (mark) ctx.mark() // only the first mark counts
        text += e.token
      }
      return text
    },
    { key: `${key}/held${mark ? '' : '-unmarked'}` },
  )
}
await Promise.all([completeHeld('e', true), completeHeld('f', false)])
const marked = rx.stats(`${key}/held`).lastLatencyMs
const unmarked = rx.stats(`${key}/held-unmarked`).lastLatencyMs
console.log(`pattern 2: slot held for the whole stream; latency sample with mark() ${marked.toFixed(0)} ms, without ${unmarked.toFixed(0)} ms`)
console.log('  without mark() the sample is the whole stream: baselineMs reads stream lengths, and a stream past')
console.log('  breaker.slowCallMs (5 s) is a slow call, so long streams open the breaker against a healthy upstream')

if (!(s1.lastLatencyMs < 1000 && marked < 1000 && unmarked > 1000)) {
  console.error('unexpected latency samples')
  process.exitCode = 1
}
server.close()
