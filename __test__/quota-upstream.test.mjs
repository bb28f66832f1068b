// Quotas against a mock LLM API in its own process that enforces 500 requests and 200 000
// tokens per minute as OpenAI does (an exact sliding log; 429 with retry-after above it), its
// window scaled down twentyfold: 500 requests and 200 000 tokens per 3 s, so that a prompt is
// the same share of the budget as it is per minute. One process offers twice
// the token budget with prompts of 100 to 8 000 tokens, through fetch and through the undici
// interceptor with streaming, with default options plus the quota. Goals: no 429 at all, and
// at least 90 % of the token budget used. Each run prints its figures.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Agent, request, fetch as undiciFetch } from 'undici'
import { Resilix, isRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { startLlmUpstream, promptMix, offeredRate, offer, bodyOf } from './fixtures/llm-upstream.mjs'

const REQUESTS = 500
const TOKENS = 200_000
const WINDOW_MS = 3_000
const DURATION_MS = 9_000
const quota = { requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS, pace: true }

/**
 * The token budget used once the first window has passed (the client cannot spend a window's
 * budget before its calls arrive): tokens the upstream counted for requests that arrived in
 * the whole windows from then to the last one, over those windows' budget (at most 1).
 */
function utilisation(s) {
  const from = s.firstAt + s.windowMs
  const windows = Math.floor((s.lastAt - from) / s.windowMs)
  if (windows < 1) return 0
  const to = from + windows * s.windowMs
  let tokens = 0
  for (const [at, t] of s.admitted) if (at >= from && at < to) tokens += t
  return tokens / (s.tokensPerWindow * windows)
}

function report(name, s, results) {
  const refused = results.filter((r) => !r.ok && isRejectedError(r.error)).length
  const errors = results.filter((r) => !r.ok && !isRejectedError(r.error))
  const line = {
    sent: s.requests, ok: s.ok, '429': s.rejected429, refusedLocally: refused, otherErrors: errors.length,
    utilisation: utilisation(s).toFixed(3), maxTokensInWindow: s.maxTokensInWindow,
  }
  console.log(`# ${name}: ${JSON.stringify(line)}`)
  return { refused, errors }
}

test('fetch in execute(): twice the token budget offered, no 429, at least 90 % of it used', async () => {
  const up = await startLlmUpstream({ requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS })
  const rx = new Resilix({ quota, timeoutMs: 2 * WINDOW_MS })
  try {
    const reqs = promptMix(1, 1000)
    const rate = offeredRate({ tokens: TOKENS, windowMs: WINDOW_MS, factor: 2 })
    const results = await offer({
      reqs,
      rate,
      durationMs: DURATION_MS,
      send: (req) =>
        rx.execute(
          async (ctx) => {
            const res = await fetch(up.url(), { method: 'POST', body: bodyOf(req), headers: { 'content-type': 'application/json' }, signal: ctx.signal })
            if (res.status === 429) return res // the quota reads its retry-after
            const body = await res.json()
            ctx.charge({ tokens: body.usage.total_tokens })
            return res
          },
          { key: 'llm', cost: { tokens: req.estimate } },
        ),
    })
    const s = await up.stats()
    const { errors } = report('execute', s, results)
    assert.equal(errors.length, 0, String(errors[0]?.error))
    assert.equal(s.rejected429, 0, 'no call met a 429')
    assert.ok(utilisation(s) >= 0.9, `utilisation ${utilisation(s)}`)
  } finally {
    rx.close()
    await up.close()
  }
})

test('the undici interceptor, streaming, usage read from the last event: no 429, at least 90 % used', async () => {
  const up = await startLlmUpstream({ requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS })
  const rx = new Resilix({ quota: { requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS }, timeoutMs: 2 * WINDOW_MS })
  const dispatcher = new Agent().compose(
    interceptor(rx, {
      cost: (opts) => {
        const b = JSON.parse(opts.body)
        return { tokens: b.prompt_tokens + b.max_tokens }
      },
      usage: 'openai',
    }),
  )
  try {
    const reqs = promptMix(2, 1000)
    const rate = offeredRate({ tokens: TOKENS, windowMs: WINDOW_MS, factor: 2 })
    const results = await offer({
      reqs,
      rate,
      durationMs: DURATION_MS,
      send: async (req) => {
        // request() hands the interceptor its body as given (fetch turns it into a stream).
        const res = await request(up.url(), { method: 'POST', body: bodyOf(req, true), headers: { 'content-type': 'application/json' }, dispatcher })
        const text = await res.body.text()
        if (res.statusCode === 200) assert.match(text, /"usage"/)
        return res.statusCode
      },
    })
    const s = await up.stats()
    const { errors } = report('interceptor, streaming', s, results)
    assert.equal(errors.length, 0, String(errors[0]?.error))
    assert.equal(s.rejected429, 0, 'no call met a 429')
    assert.ok(utilisation(s) >= 0.9, `utilisation ${utilisation(s)}`)
    // Every stream's usage settled its charge: what the window holds is what the upstream counted.
    const spent = rx.stats(up.origin).quota.budgets.find((b) => b.name === 'tokens').spent
    assert.ok(spent <= TOKENS, `${spent} tokens spent in the window`)
  } finally {
    rx.close()
    await dispatcher.close()
    await up.close()
  }
})

test('a request larger than the whole budget is refused in under a millisecond, with no network call', async () => {
  const up = await startLlmUpstream({ requests: REQUESTS, tokens: TOKENS, windowMs: WINDOW_MS })
  const rx = new Resilix({ quota })
  const dispatcher = new Agent().compose(interceptor(rx, { cost: { tokens: TOKENS + 1 } }))
  try {
    // Warm: the key and the code paths exist before the refusal is timed.
    await rx.execute(() => 0, { key: 'llm', cost: { tokens: 1 } })
    const times = []
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now()
      const err = await rx.execute(() => fetch(up.url()), { key: 'llm', cost: { tokens: TOKENS + 1 } }).catch((e) => e)
      times.push(performance.now() - t0)
      assert.equal(err.reason, 'quota')
    }
    times.sort((a, b) => a - b)
    console.log(`# oversize refusal: median ${times[10].toFixed(3)} ms`)
    assert.ok(times[10] < 1, `median ${times[10]} ms`)
    const viaInterceptor = await undiciFetch(up.url(), { method: 'POST', body: '{}', dispatcher }).catch((e) => e)
    assert.ok(isRejectedError(viaInterceptor), String(viaInterceptor))
    assert.equal((await up.stats()).requests, 0, 'nothing reached the upstream')
  } finally {
    rx.close()
    await dispatcher.close()
    await up.close()
  }
})
