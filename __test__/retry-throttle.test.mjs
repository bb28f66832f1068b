// A retry the adaptive throttle would refuse is refused when it is decided, before its wait
// (ADR 1004): the call ends at once with the attempt before, onRetry never announces it, and the
// refusal is told to onReject and counted. A retry that passes is not drawn again after its wait.
// Against a real local upstream that answers 429 with `Retry-After: 30`: a retry that waited
// would still be waiting when the test closes the instance. No timings are asserted.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import { Agent, request } from 'undici'
import { Resilix, attemptsOf, findRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { sleep } from './helpers.mjs'

async function start429(retryAfter) {
  let requests = 0
  const server = http.createServer((req, res) => {
    requests++
    res.writeHead(429, { 'retry-after': retryAfter }).end('slow down')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    get requests() {
      return requests
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

const get = (url) => async (ctx) => {
  const r = await fetch(url, { signal: ctx.signal })
  await r.text()
  return r
}

test('a retry the throttle refuses is not waited for and never announced to onRetry; the ones announced are the ones that wait', async () => {
  const up = await start429('30')
  const rx = new Resilix({ retry: true, seed: 9 })
  const retries = []
  const refusals = []
  rx.onRetry((e) => retries.push(e))
  rx.onReject((e) => refusals.push(e))
  try {
    // Fill the key's window with 429s (no retry): the default throttle then refuses up to 90 %.
    for (let i = 0; i < 30; i++) await rx.execute(get(up.url), { key: 'k', retry: false }).catch(() => {})
    const sentBefore = up.requests
    const throttledBefore = rx.stats('k').rejections.throttle
    refusals.length = 0

    const N = 100
    const outcomes = new Array(N)
    const calls = Array.from({ length: N }, (_, i) =>
      rx.execute(get(up.url), { key: 'k' }).then(
        (r) => (outcomes[i] = { r }),
        (e) => (outcomes[i] = { e }),
      ),
    )
    // Every call has either ended or been announced to onRetry (and is waiting 30 s).
    while (outcomes.filter((o) => o !== undefined).length + retries.length < N) await sleep(10)

    const ended = outcomes.filter((o) => o !== undefined)
    const answered = ended.filter((o) => o.r !== undefined)
    const firstRefused = ended.filter((o) => findRejectedError(o.e)?.reason === 'throttle')
    const sent = up.requests - sentBefore
    const report = `${sent} sent: ${answered.length} ended with their 429, ${retries.length} retries announced, ${firstRefused.length} refused at once`
    console.log(`# ${report}`)
    // Refused before the wait: the call ends now with the 429 its one attempt got.
    assert.ok(answered.length > 0, report)
    for (const { r } of answered) {
      assert.equal(r.status, 429)
      assert.equal(attemptsOf(r), 1)
    }
    // Every attempt sent either ended its call or was announced as a retry that waits.
    assert.equal(answered.length + retries.length, sent, report)
    assert.equal(answered.length + retries.length + firstRefused.length, N, report)
    // Told and counted as the throttle's refusals: the first attempts and the retries it refused.
    const told = refusals.filter((e) => e.reason === 'throttle' && e.key === 'k').length
    assert.equal(told, firstRefused.length + answered.length, report)
    // Which attempt each refusal was: the retries as attempt 2, the first attempts without one.
    assert.equal(refusals.filter((e) => e.reason === 'throttle' && e.attempt === 2).length, answered.length, report)
    assert.equal(refusals.filter((e) => e.reason === 'throttle' && !('attempt' in e)).length, firstRefused.length, report)
    assert.equal(rx.stats('k').rejections.throttle - throttledBefore, told, report)
    // The retries announced are still waiting: close() ends them.
    rx.close()
    await Promise.all(calls)
    const closed = outcomes.filter((o) => o.e !== undefined && /closed/.test(o.e.message)).length
    assert.equal(closed, retries.length, report)
  } finally {
    rx.close()
    await up.close()
  }
})

test('a retry the throttle let through is sent after its wait, not refused then', async () => {
  const up = await start429('0')
  // Attempts that all answer 429: the default throttle refuses 90 % of the calls it decides; a
  // retry it let through when deciding must still be sent.
  const rx = new Resilix({ retry: { attempts: 2, baseMs: 0, maxDelayMs: 1 }, seed: 4 })
  const retries = []
  rx.onRetry((e) => retries.push(e))
  try {
    for (let i = 0; i < 30; i++) await rx.execute(get(up.url), { key: 'k', retry: false }).catch(() => {})
    const sentBefore = up.requests
    let firstAttempts = 0
    for (let i = 0; i < 1000; i++) {
      const r = await rx.execute(get(up.url), { key: 'k' }).catch((e) => e)
      if (r.status === 429) firstAttempts++
    }
    const sent = up.requests - sentBefore
    console.log(`# ${sent} sent, ${firstAttempts} answered, ${retries.length} retries`)
    // Each announced retry reached the upstream: every request is a first attempt or a retry.
    assert.ok(retries.length > 0, `${retries.length} retries`)
    assert.equal(sent, firstAttempts + retries.length, `${sent} sent, ${firstAttempts} answered, ${retries.length} retries`)
  } finally {
    rx.close()
    await up.close()
  }
})

test('through the interceptor too: a retry the throttle refuses ends the request at once with its 429, never announced', async () => {
  const up = await start429('30')
  const rx = new Resilix({ retry: true, seed: 9 })
  const origin = new URL(up.url).origin
  const agent = new Agent().compose(interceptor(rx))
  const retries = []
  const refusals = []
  rx.onRetry((e) => retries.push(e))
  rx.onReject((e) => refusals.push(e))
  try {
    for (let i = 0; i < 30; i++) await rx.execute(get(up.url), { key: origin, retry: false }).catch(() => {})
    const sentBefore = up.requests
    refusals.length = 0
    const N = 100
    const outcomes = new Array(N)
    const calls = Array.from({ length: N }, (_, i) =>
      request(up.url, { dispatcher: agent }).then(
        async (res) => {
          await res.body.text()
          outcomes[i] = { status: res.statusCode }
        },
        (e) => (outcomes[i] = { e }),
      ),
    )
    while (outcomes.filter((o) => o !== undefined).length + retries.length < N) await sleep(10)
    const answered = outcomes.filter((o) => o?.status === 429).length
    const sent = up.requests - sentBefore
    const report = `${sent} sent: ${answered} ended with their 429, ${retries.length} retries announced`
    console.log(`# ${report}`)
    assert.ok(answered > 0, report)
    assert.equal(answered + retries.length, sent, report)
    // Each retry refused is told to onReject as attempt 2.
    assert.equal(refusals.filter((e) => e.reason === 'throttle' && e.attempt === 2).length, answered, report)
    // The retries announced are still waiting: close() ends them.
    rx.close()
    await Promise.all(calls)
  } finally {
    rx.close()
    await agent.close()
    await up.close()
  }
})
