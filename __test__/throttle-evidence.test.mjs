// What engages the adaptive throttle (ADR 1004), against real local upstreams: a flaky but idle
// upstream (a third of its calls 503 without Retry-After, 7 % 429 with `Retry-After: 1`) is
// served by the defaults with retry at least as well as by plain fetch; a 503 route beside an
// always-200 route on one origin costs the 200s nothing through the interceptor; a 503 that
// asks for a wait is still a refusal. No timings are asserted: counts only.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import { Agent, request } from 'undici'
import { Resilix, findRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { prng } from './fixtures/prng.mjs'

/**
 * `/flaky`: after 5 ms, 503 a third of the time, 429 with `Retry-After: 1` 7 % of it, else 200.
 * `/third-503`: 503 a third of the time, else 200. `/503`: 503; `/503-wait`: 503 with
 * `Retry-After: 1`. `/ok`: 200.
 */
async function startFlaky(seed) {
  const draw = prng(seed)
  const seen = { flaky: 0, ok: 0 }
  const server = http.createServer((req, res) => {
    if (req.url === '/ok') {
      seen.ok++
      return res.end('ok')
    }
    if (req.url === '/503-wait') return res.writeHead(503, { 'retry-after': '1' }).end('busy')
    if (req.url === '/503') return res.writeHead(503).end('unavailable')
    if (req.url === '/third-503') {
      seen.flaky++
      return draw() < 1 / 3 ? res.writeHead(503).end('unavailable') : res.end('ok')
    }
    seen.flaky++
    const u = draw()
    setTimeout(() => {
      if (u < 1 / 3) res.writeHead(503).end('unavailable')
      else if (u < 1 / 3 + 0.07) res.writeHead(429, { 'retry-after': '1' }).end('slow down')
      else res.end('ok')
    }, 5)
  })
  server.keepAliveTimeout = 10_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    seen,
    close: () => new Promise((r) => server.close(r)),
  }
}

/** `n` calls, `width` at a time, each `call(i)`; the outcomes in order. */
async function pool(n, width, call) {
  const out = new Array(n)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++
        try {
          out[i] = { status: await call(i) }
        } catch (error) {
          out[i] = { error }
        }
      }
    }),
  )
  return out
}

const throttled = (outs) => outs.filter((o) => o.error !== undefined && findRejectedError(o.error)?.reason === 'throttle').length
const served = (outs) => outs.filter((o) => o.status === 200).length

test('a flaky but idle upstream: the defaults with retry serve at least what plain fetch serves, the throttle refusing at most 5 %', async () => {
  const N = 300
  const plainUp = await startFlaky(7)
  const up = await startFlaky(7)
  const rx = new Resilix({ timeoutMs: 10_000, retry: true })
  try {
    const plain = await pool(N, 10, async () => {
      const r = await fetch(plainUp.url('/flaky'))
      await r.text()
      return r.status
    })
    const mine = await pool(N, 10, () =>
      rx.execute(async (ctx) => {
        const r = await fetch(up.url('/flaky'), { signal: ctx.signal })
        await r.text()
        return r
      }, { key: 'flaky' }).then((r) => r.status),
    )
    const report = `plain fetch ${served(plain)} served; defaults with retry ${served(mine)} served, ${throttled(mine)} refused by the throttle (${up.seen.flaky} requests)`
    console.log(`# ${report}`)
    assert.ok(served(mine) >= served(plain), report)
    assert.ok(throttled(mine) <= 0.05 * N, report)
    // The 503s are still overloads to the limit; the 429s among them reached the throttle's window.
    assert.ok(rx.stats('flaky').verdicts.overload > 0.3 * N, report)
  } finally {
    rx.close()
    await plainUp.close()
    await up.close()
  }
})

test('through the interceptor, a route answering 503 without Retry-After gets no call to a healthy route of the same origin refused', async () => {
  const up = await startFlaky(11)
  const rx = new Resilix()
  const agent = new Agent().compose(interceptor(rx))
  const get = async (path) => {
    const res = await request(up.url(path), { dispatcher: agent })
    await res.body.text()
    return res.statusCode
  }
  try {
    // A third of one route's calls 503, the other always 200, called a quarter as often.
    const [flaky, healthy] = await Promise.all([pool(800, 8, () => get('/third-503')), pool(200, 2, () => get('/ok'))])
    // The flaky calls have stopped: the healthy route goes on.
    const after = await pool(100, 5, () => get('/ok'))
    const origin = new URL(up.url('/')).origin
    const report = `refused by the throttle: ${throttled(flaky)} of 800 flaky, ${throttled(healthy)} of 200 healthy, ${throttled(after)} of 100 after; healthy served ${served(healthy) + served(after)} of 300; overloads ${rx.stats(origin).verdicts.overload}`
    console.log(`# ${report}`)
    assert.ok(rx.stats(origin).verdicts.overload > 200, report)
    assert.equal(throttled(flaky) + throttled(healthy) + throttled(after), 0, report)
  } finally {
    await agent.close()
    rx.close()
    await up.close()
  }
})

test('a 503 that asks for a wait (Retry-After) is a refusal and engages the throttle; one that asks none never does', async () => {
  const up = await startFlaky(1)
  try {
    const rx = new Resilix({ throttle: { multiplier: 1, maxRejection: 1 }, seed: 5 })
    try {
      const call = (path) => () =>
        rx.execute(async (ctx) => {
          const r = await fetch(up.url(path), { signal: ctx.signal })
          await r.text()
          return r
        }, { key: path }).then((r) => r.status)
      const waiting = await pool(100, 1, call('/503-wait'))
      const plain = await pool(100, 1, call('/503'))
      const report = `refused: ${throttled(waiting)} of 100 asking a wait, ${throttled(plain)} of 100 asking none`
      assert.ok(throttled(waiting) > 50, report)
      assert.equal(throttled(plain), 0, report)
      assert.equal(rx.stats('/503').verdicts.overload, 100, 'still overloads')
    } finally {
      rx.close()
    }
    // The same through the interceptor, which reads the status and headers of undici's response.
    for (const [path, engages] of [['/503-wait', true], ['/503', false]]) {
      const rx = new Resilix({ throttle: { multiplier: 1, maxRejection: 1 }, seed: 5 })
      const agent = new Agent().compose(interceptor(rx))
      try {
        const outs = await pool(100, 1, async () => {
          const res = await request(up.url(path), { dispatcher: agent })
          await res.body.text()
          return res.statusCode
        })
        const report = `${path} through the interceptor: ${throttled(outs)} of 100 refused`
        assert.ok(engages ? throttled(outs) > 50 : throttled(outs) === 0, report)
      } finally {
        await agent.close()
        rx.close()
      }
    }
  } finally {
    await up.close()
  }
})

test('permit.release("overload") is a refusal to the throttle: what the caller names is not second-guessed', async () => {
  const rx = new Resilix({ throttle: { multiplier: 1, maxRejection: 1 }, seed: 5 })
  try {
    let refused = 0
    for (let i = 0; i < 100; i++) {
      try {
        const p = await rx.acquire('k')
        p.release('overload')
      } catch (e) {
        if (findRejectedError(e)?.reason === 'throttle') refused++
        else throw e
      }
    }
    assert.ok(refused > 50, `${refused} of 100`)
  } finally {
    rx.close()
  }
})
