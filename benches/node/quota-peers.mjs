// A token quota, side by side in one run: one process offers twice the token budget of a mock
// LLM API that enforces requests and tokens per window as OpenAI does (an exact sliding log,
// 429 above it; __test__/fixtures/llm-upstream-server.cjs), with prompts of 100 to 8 000
// tokens, open loop, through each library in turn against a fresh upstream:
//
//   resilix            new Resilix({ quota: { requests, tokens, windowMs, pace: true } }),
//                      execute(fn, { cost: { tokens: estimate } }), ctx.charge(usage)
//   bottleneck         a weighted token reservoir of one window's budget, refreshed every
//                      window (its documented way to limit a quota), weight = the estimate
//   p-queue            intervalCap = the request quota per window (it counts requests)
//   p-queue (tokens)   intervalCap = the token budget / the mix's mean estimate
//
// The estimate is prompt + max_tokens; the upstream charges it at arrival and settles the real
// usage (prompt + completion) when it answers. Each library gets `--seconds` of load, then two
// windows to drain; calls still waiting then are dropped. Printed per library: calls sent, the
// 429s they met, and the token budget used over the whole windows of the offered period.
//
//   node benches/node/quota-peers.mjs [--seconds 24] [--window-ms 6000] [--tokens 200000] [--requests 500] [--only resilix,bottleneck]
//                                     [--family openai|anthropic|none] [--client-factor 1]
// --family none: the upstream sends no rate-limit headers and no retry-after; --client-factor:
// resilix's configured budget is this multiple of the upstream's (a wrong configuration).
import { parseArgs } from 'node:util'
import { createRequire } from 'node:module'
import PQueue from 'p-queue'
import { Resilix } from '../../index.js'
import { startLlmUpstream, promptMix, offeredRate, offer, bodyOf, MEAN_ESTIMATE } from '../../__test__/fixtures/llm-upstream.mjs'

const require = createRequire(import.meta.url)
const Bottleneck = require('bottleneck')

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '24' },
    'window-ms': { type: 'string', default: '6000' },
    tokens: { type: 'string', default: '200000' },
    requests: { type: 'string', default: '500' },
    only: { type: 'string' },
    family: { type: 'string', default: 'openai' },
    'client-factor': { type: 'string', default: '1' },
  },
})
const DURATION_MS = Number(opt.seconds) * 1000
const WINDOW_MS = Number(opt['window-ms'])
const TOKENS = Number(opt.tokens)
const REQUESTS = Number(opt.requests)
/** resilix's configured budget over the upstream's: above 1, the client believes too much. */
const CLIENT_FACTOR = Number(opt['client-factor'])

/** One request to the mock with fetch: its status, and its usage when answered. */
async function post(url, req, signal) {
  const res = await fetch(url, { method: 'POST', body: bodyOf(req), headers: { 'content-type': 'application/json' }, signal })
  const body = await res.json()
  return { status: res.status, res, usage: body.usage }
}

export const contenders = [
  {
    name: 'resilix',
    setup() {
      const rx = new Resilix({ quota: { requests: Math.round(CLIENT_FACTOR * REQUESTS), tokens: Math.round(CLIENT_FACTOR * TOKENS), windowMs: WINDOW_MS, pace: true }, timeoutMs: 2 * WINDOW_MS })
      return {
        send: (url, req) =>
          rx.execute(
            async (ctx) => {
              const r = await post(url, req, ctx.signal)
              if (r.usage) ctx.charge({ tokens: r.usage.total_tokens })
              return r
            },
            { key: 'llm', cost: { tokens: req.estimate } },
          ),
        stop: () => rx.close(),
      }
    },
  },
  {
    name: 'bottleneck',
    setup() {
      const limiter = new Bottleneck({ reservoir: TOKENS, reservoirRefreshAmount: TOKENS, reservoirRefreshInterval: WINDOW_MS })
      return {
        send: (url, req) => limiter.schedule({ weight: req.estimate }, () => post(url, req)),
        stop: () => limiter.stop({ dropWaitingJobs: true }),
      }
    },
  },
  {
    name: 'p-queue',
    setup() {
      const q = new PQueue({ intervalCap: REQUESTS, interval: WINDOW_MS })
      return { send: (url, req) => q.add(() => post(url, req)), stop: () => q.clear() }
    },
  },
  {
    name: 'p-queue (tokens)',
    setup() {
      const q = new PQueue({ intervalCap: Math.floor(TOKENS / MEAN_ESTIMATE), interval: WINDOW_MS })
      return { send: (url, req) => q.add(() => post(url, req)), stop: () => q.clear() }
    },
  },
]

/** Tokens counted for requests that arrived in the whole windows of the offered period, over their budget. */
function utilisation(s) {
  const windows = Math.floor(DURATION_MS / s.windowMs)
  const to = s.firstAt + windows * s.windowMs
  let tokens = 0
  for (const [at, t] of s.admitted) if (at < to) tokens += t
  return tokens / (s.tokensPerWindow * windows)
}

async function run(c) {
  const up = await startLlmUpstream({ requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS, family: opt.family })
  const lib = c.setup()
  const url = up.url()
  const reqs = promptMix(7, 5000)
  const rate = offeredRate({ tokens: TOKENS, windowMs: WINDOW_MS, factor: 2 })
  const drained = offer({ reqs, rate, durationMs: DURATION_MS, send: (req) => lib.send(url, req) })
  // Two windows after the last arrival, what still waits is dropped.
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    lib.stop()
  }
  const timer = new Promise((r) => setTimeout(r, DURATION_MS + 2 * WINDOW_MS))
  await Promise.race([drained, timer.then(stop)])
  const results = await Promise.race([drained, new Promise((r) => setTimeout(r, 2000, []))])
  stop()
  const s = await up.stats()
  await up.close()
  const offered = Math.floor((rate * DURATION_MS) / 1000)
  return { name: c.name, offered, sent: s.requests, got429: s.rejected429, pct429: (100 * s.rejected429) / Math.max(1, s.requests), util: utilisation(s), maxWindow: s.maxTokensInWindow / TOKENS, settled: results.length }
}

async function main() {
  console.log(
    `token quota: ${REQUESTS} requests and ${TOKENS} tokens per ${WINDOW_MS} ms (sliding), offered 2 × the token budget for ${DURATION_MS / 1000} s, prompts 100–8 000 tokens, max_tokens 500`,
  )
  console.log('| library | calls offered | reached the upstream | 429s met | % of those sent | token budget used | most tokens in one window |')
  console.log('|---|---|---|---|---|---|---|')
  for (const c of contenders) {
    if (opt.only !== undefined && !opt.only.split(',').includes(c.name)) continue
    const r = await run(c)
    console.log(`| ${r.name} | ${r.offered} | ${r.sent} | ${r.got429} | ${r.pct429.toFixed(1)} % | ${(100 * r.util).toFixed(1)} % | ${(100 * r.maxWindow).toFixed(1)} % |`)
  }
}

await main()
process.exit(0)
