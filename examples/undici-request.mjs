// undici's request() through resilix, with a keep-alive Pool per upstream. resilix reads the
// result's statusCode to classify the call; the body is consumed inside fn, so the slot is held
// until the response is fully read. Runs against a local server it starts itself.
//   node examples/undici-request.mjs
import http from 'node:http'
import { Pool } from 'undici'
import { Resilix, isRejectedError } from 'resilix' // resolves to this repository (package self-reference)

// A local upstream that serves 4 requests at once; past 12 waiting it answers 503.
let busy = 0
let waiting = 0
const server = http.createServer((req, res) => {
  if (busy + waiting >= 16) return res.writeHead(503).end('overloaded')
  waiting++
  const serve = () => {
    if (busy >= 4) return setTimeout(serve, 5)
    waiting--
    busy++
    setTimeout(() => {
      busy--
      res.end(JSON.stringify({ ok: true }))
    }, 30)
  }
  serve()
})
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const origin = `http://127.0.0.1:${server.address().port}`

const pool = new Pool(origin, { connections: 64 })
// A bulkhead as an outer fixed cap, the adaptive limiter inside it, a 1 s deadline.
const rx = new Resilix({ timeoutMs: 1000, bulkhead: { maxConcurrent: 50 } })
const key = new URL(origin).host

async function getJson(path) {
  return rx.execute(
    async (ctx) => {
      const { statusCode, body } = await pool.request({ path, method: 'GET', signal: ctx.signal })
      ctx.mark()
      if (statusCode !== 200) {
        await body.dump()
        // Thrown errors carrying statusCode are classified by it: 503 is 'overload', not 'failure'.
        throw Object.assign(new Error(`HTTP ${statusCode}`), { statusCode })
      }
      return body.json()
    },
    { key },
  )
}

const outcomes = {}
await Promise.all(
  Array.from({ length: 60 }, async (_, i) => {
    let outcome
    try {
      await getJson(`/item/${i}`)
      outcome = 'ok'
    } catch (err) {
      outcome = isRejectedError(err) ? `refused by resilix (${err.reason})` : err.message
    }
    outcomes[outcome] = (outcomes[outcome] || 0) + 1
  }),
)
console.log('60 calls at once:', outcomes)
const s = rx.stats(key)
console.log(`key ${key}: limit ${s.limit}, bulkhead ${s.bulkheadActive}, last latency ${s.lastLatencyMs.toFixed(1)} ms`)
console.log('verdicts', s.verdicts, 'rejections', s.rejections)
await pool.close()
server.close()
