// A plain node:http service that answers /ask by calling an LLM API through resilix, with the
// API's quota (requests and tokens a window), and serves /metrics for Prometheus: the calls
// waiting for budget, what each budget has spent against its limit, the retries.
//   node examples/llm-service-metrics.mjs   (needs prom-client)
import http from 'node:http'
import client from 'prom-client'
import { Resilix } from 'resilix' // resolves to this repository (package self-reference)
import { instrument } from 'resilix/prometheus'

// A local mock of an LLM chat API: 4 requests per 2 s window, then 429 with retry-after; each
// answer reports the tokens it used, as OpenAI's `usage` does.
const WINDOW_MS = 2000
let windowStart = Date.now()
let served = 0
const llm = http.createServer((req, res) => {
  if (Date.now() - windowStart >= WINDOW_MS) {
    windowStart = Date.now()
    served = 0
  }
  if (++served > 4) return res.writeHead(429, { 'retry-after': '1' }).end()
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ choices: [{ message: { content: 'hello' } }], usage: { total_tokens: 120 } }))
  }, 20)
})
await new Promise((r) => llm.listen(0, '127.0.0.1', r))
const api = `http://127.0.0.1:${llm.address().port}`

// The same quota as the API's: calls beyond it wait for budget here instead of meeting a 429.
const rx = new Resilix({ quota: { requests: 4, tokens: 2000, windowMs: WINDOW_MS, pace: true }, timeoutMs: 10_000, retry: true })
const metrics = instrument(rx) // prom-client's global register

async function ask(question) {
  return rx.execute(async (ctx) => {
    const res = await fetch(`${api}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: question }], max_tokens: 200 }),
      signal: ctx.signal,
    })
    if (!res.ok) return res // a 429's retry-after cools the key down
    const body = await res.json()
    ctx.charge({ tokens: body.usage.total_tokens }) // the estimate below, settled
    return body
  }, { key: api, cost: { requests: 1, tokens: 300 } })
}

const service = http.createServer(async (req, res) => {
  if (req.url === '/metrics') {
    return res.writeHead(200, { 'content-type': client.register.contentType }).end(await client.register.metrics())
  }
  const answer = await ask('hi')
  res.writeHead(answer.status === 429 ? 503 : 200).end(answer.choices?.[0].message.content ?? 'busy')
})
await new Promise((r) => service.listen(0, '127.0.0.1', r))
const base = `http://127.0.0.1:${service.address().port}`

const show = (text) => {
  for (const line of text.split('\n')) if (/^resilix_(quota_|retries)/.test(line)) console.log(line)
}

// 8 questions at once: 4 fit the window, 4 wait for budget. Scraped while they wait, and after.
const asked = Promise.all([...Array(8)].map(() => fetch(`${base}/ask`).then((r) => r.status)))
await new Promise((r) => setTimeout(r, 500))
console.log('scrape while calls wait for budget:')
show(await (await fetch(`${base}/metrics`)).text())
const statuses = await asked
console.log(`answers: ${statuses.filter((s) => s === 200).length} of ${statuses.length} ok`)
console.log('scrape after:')
show(await (await fetch(`${base}/metrics`)).text())

metrics.dispose()
rx.close()
service.close()
llm.close()
