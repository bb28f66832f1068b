// What reading a request body into memory costs, so that the interceptor can send it again on a
// retry (ADR 0811). For each body size, fetch POSTs a JSON string body through the interceptor
// with retry on, to a local upstream that answers 200 at once, interleaved:
//
//   replay   replayBodyBytes above the size: the body is read into one Buffer before the first
//            attempt, which sends that Buffer
//   stream   replayBodyBytes 0: the body goes to the socket as fetch's stream, as before
//
// Printed per size: CPU time of this process per request (median of rounds, requests one at a
// time; the upstream runs in this process too, alike for both) and the
// extra bytes held while `--concurrent` requests wait for their response (the upstream holds the
// response 400 ms): `process.memoryUsage().arrayBuffers` at that moment after a
// full GC, less the same without.
//
//   node --expose-gc benches/node/replay-body.mjs [--rounds 7] [--requests 40] [--concurrent 20]
import { createServer } from 'node:http'
import { parseArgs } from 'node:util'
import { Agent, fetch } from 'undici'
import { Resilix } from '../../index.js'
import { interceptor } from '../../undici.js'

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    requests: { type: 'string', default: '40' },
    concurrent: { type: 'string', default: '20' },
  },
})
const ROUNDS = Number(opt.rounds)
const REQUESTS = Number(opt.requests)
const CONCURRENT = Number(opt.concurrent)
const SIZES = [64 << 10, 512 << 10, 1 << 20, 2 << 20]

let holdMs = 0
const server = createServer(async (req, res) => {
  for await (const _ of req);
  setTimeout(() => res.end('ok'), holdMs)
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const url = `http://127.0.0.1:${server.address().port}/v1/chat/completions`

function client(replay) {
  const rx = new Resilix({ retry: true, limiter: false })
  const agent = new Agent({ connections: 100 }).compose(interceptor(rx, { retryMethods: ['POST'], replayBodyBytes: replay ? 64 << 20 : 0 }))
  return { rx, agent }
}

const post = (agent, body) => fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent }).then((r) => r.text())

const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]

const rows = []
for (const size of SIZES) {
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(size - 60) }] })
  const c = { replay: client(true), stream: client(false) }
  const times = { replay: [], stream: [] }
  holdMs = 0
  for (const k of ['replay', 'stream']) for (let i = 0; i < 5; i++) await post(c[k].agent, body) // warm up
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 ? ['stream', 'replay'] : ['replay', 'stream']) {
      const t = process.cpuUsage()
      for (let i = 0; i < REQUESTS; i++) await post(c[k].agent, body)
      const d = process.cpuUsage(t)
      times[k].push((d.user + d.system) / 1000 / REQUESTS)
    }
  }
  const held = {}
  holdMs = 400
  for (const k of ['stream', 'replay']) {
    const samples = []
    for (let r = 0; r < 5; r++) {
      globalThis.gc?.()
      const before = process.memoryUsage().arrayBuffers
      const all = Array.from({ length: CONCURRENT }, () => post(c[k].agent, body))
      await new Promise((r) => setTimeout(r, 200))
      globalThis.gc?.() // what is still referenced: the bodies in flight
      samples.push(process.memoryUsage().arrayBuffers - before)
      await Promise.all(all)
    }
    held[k] = median(samples)
  }
  rows.push({
    size,
    replayMs: median(times.replay),
    streamMs: median(times.stream),
    heldMiB: (held.replay - held.stream) / 2 ** 20,
  })
  for (const k of ['replay', 'stream']) {
    await c[k].agent.close()
    c[k].rx.close()
  }
}
server.close()

console.log(`| body | CPU per request, replay | CPU per request, stream | extra memory, ${CONCURRENT} in flight |`)
console.log('|---|---|---|---|')
for (const r of rows) {
  console.log(`| ${r.size >> 10} KiB | ${r.replayMs.toFixed(2)} ms | ${r.streamMs.toFixed(2)} ms | ${r.heldMiB.toFixed(1)} MiB |`)
}
