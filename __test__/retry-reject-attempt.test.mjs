// A retry announced to onRetry and refused by our own policies when it is sent (the limit with
// queueing off, a full queue) is told to onReject with the attempt it was (ADR 1004); a first
// attempt's refusal carries no attempt. Through execute and through the undici interceptor,
// against a real local upstream answering 503. The slot is taken from the onRetry listener
// itself, so the retry is sure to find it held: no timing is assumed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import { Agent, request } from 'undici'
import { Resilix, attemptsOf, findRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { sleep } from './helpers.mjs'

async function start503() {
  let requests = 0
  const server = http.createServer((req, res) => {
    requests++
    res.writeHead(503).end('busy')
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

const RETRY = { attempts: 2, baseMs: 5, maxDelayMs: 5 }

/**
 * An instance whose key 'k' runs one call at a time; when a retry is announced, the listener
 * takes the slot (and with `queued`, fills the queue) so that the retry is refused when sent.
 */
function setup(queue) {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue, throttle: false, retry: RETRY })
  const retries = []
  const refusals = []
  const held = []
  rx.onRetry((e) => {
    retries.push(e)
    held.push(rx.acquire('k'))
    if (queue !== false) held.push(rx.acquire('k'))
  })
  rx.onReject((e) => refusals.push(e))
  const release = async () => {
    for (const p of held) (await p).release('success')
  }
  return { rx, retries, refusals, release }
}

for (const [name, queue, reason] of [
  ['the limit with queueing off', false, 'limit'],
  ['a full queue', { maxQueued: 1 }, 'queue'],
]) {
  test(`execute: a retry refused when sent by ${name} is told to onReject with attempt 2; a first attempt's refusal has no attempt`, async () => {
    const up = await start503()
    const { rx, retries, refusals, release } = setup(queue)
    try {
      const r = await rx.execute(get(up.url), { key: 'k' })
      // The retry was never sent: the caller has the first attempt's 503.
      assert.equal(r.status, 503)
      assert.equal(up.requests, 1)
      assert.equal(attemptsOf(r), 1)
      assert.deepEqual(retries.map((e) => [e.key, e.attempt]), [['k', 2]])
      assert.deepEqual(refusals, [{ key: 'k', reason, priority: 'normal', attempt: 2 }])

      // A first attempt refused the same way: no attempt field.
      const err = await rx.execute(get(up.url), { key: 'k' }).then(
        () => assert.fail('expected a refusal'),
        (e) => e,
      )
      assert.equal(findRejectedError(err)?.reason, reason)
      assert.equal(refusals.length, 2)
      assert.deepEqual(refusals[1], { key: 'k', reason, priority: 'normal' })
      assert.equal('attempt' in refusals[1], false)
      assert.equal(up.requests, 1)
      await release()
    } finally {
      rx.close()
      await up.close()
    }
  })

  test(`interceptor: a retry refused when sent by ${name} is told to onReject with attempt 2; a first attempt's refusal has no attempt`, async () => {
    const up = await start503()
    const { rx, retries, refusals, release } = setup(queue)
    const agent = new Agent().compose(interceptor(rx, { key: 'k', retry: RETRY }))
    try {
      const err = await request(up.url, { dispatcher: agent }).then(
        () => assert.fail('expected a refusal'),
        (e) => e,
      )
      // The 503's response was abandoned for the retry; the retry was never sent.
      assert.equal(findRejectedError(err)?.reason, reason)
      assert.equal(up.requests, 1)
      assert.deepEqual(retries.map((e) => [e.key, e.attempt]), [['k', 2]])
      assert.deepEqual(refusals, [{ key: 'k', reason, priority: 'normal', attempt: 2 }])

      const first = await request(up.url, { dispatcher: agent }).then(
        () => assert.fail('expected a refusal'),
        (e) => e,
      )
      assert.equal(findRejectedError(first)?.reason, reason)
      assert.equal(refusals.length, 2)
      assert.deepEqual(refusals[1], { key: 'k', reason, priority: 'normal' })
      assert.equal('attempt' in refusals[1], false)
      assert.equal(up.requests, 1)
      await release()
    } finally {
      await agent.close()
      rx.close()
      await up.close()
    }
  })
}

/**
 * The retry waits in the queue behind the slot taken from the onRetry listener; the slot is then
 * given back as a failure, which opens the breaker (a 503 is 'overload', never a breaker failure):
 * the retry, its turn come, is refused by the breaker after waiting.
 */
function setupBreaker() {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, throttle: false, retry: RETRY, breaker: { consecutiveFailures: 1 } })
  const retries = []
  const refusals = []
  let held = null
  rx.onRetry((e) => {
    retries.push(e)
    held = rx.acquire('k')
  })
  rx.onReject((e) => refusals.push(e))
  const failWhenQueued = async () => {
    while (rx.stats('k').queued === 0) await sleep(5)
    ;(await held).release('failure')
  }
  return { rx, retries, refusals, failWhenQueued }
}

test('execute: a retry refused after waiting in the queue (a breaker that opened meanwhile) is told to onReject with attempt 2', async () => {
  const up = await start503()
  const { rx, retries, refusals, failWhenQueued } = setupBreaker()
  try {
    const call = rx.execute(get(up.url), { key: 'k' })
    await failWhenQueued()
    const r = await call
    assert.equal(r.status, 503)
    assert.equal(up.requests, 1)
    assert.deepEqual(retries.map((e) => [e.key, e.attempt]), [['k', 2]])
    assert.deepEqual(refusals, [{ key: 'k', reason: 'breaker', priority: 'normal', attempt: 2 }])
  } finally {
    rx.close()
    await up.close()
  }
})

test('interceptor: a retry refused after waiting in the queue (a breaker that opened meanwhile) is told to onReject with attempt 2', async () => {
  const up = await start503()
  const { rx, retries, refusals, failWhenQueued } = setupBreaker()
  const agent = new Agent().compose(interceptor(rx, { key: 'k', retry: RETRY }))
  try {
    const call = request(up.url, { dispatcher: agent }).then(
      () => assert.fail('expected a refusal'),
      (e) => e,
    )
    await failWhenQueued()
    assert.equal(findRejectedError(await call)?.reason, 'breaker')
    assert.equal(up.requests, 1)
    assert.deepEqual(retries.map((e) => [e.key, e.attempt]), [['k', 2]])
    assert.deepEqual(refusals, [{ key: 'k', reason: 'breaker', priority: 'normal', attempt: 2 }])
  } finally {
    await agent.close()
    rx.close()
    await up.close()
  }
})

test('a retry refused by the quota when sent is told to onReject with attempt 2, through execute and the interceptor; a first attempt has none', async () => {
  const up = await start503()
  // One request a minute, 5 s deadlines: the first attempt spends it, the retry cannot fit.
  const rx = new Resilix({ quota: { requests: 1, windowMs: 60_000 }, timeoutMs: 5_000, throttle: false, retry: RETRY })
  const agentRx = new Resilix({ quota: { requests: 1, windowMs: 60_000 }, throttle: false })
  const agent = new Agent().compose(interceptor(agentRx, { key: 'k', retry: RETRY, timeoutMs: 5_000 }))
  const retries = []
  const refusals = []
  for (const x of [rx, agentRx]) {
    x.onRetry((e) => retries.push(e))
    x.onReject((e) => refusals.push(e))
  }
  try {
    const r = await rx.execute(get(up.url), { key: 'k' })
    assert.equal(r.status, 503)
    const err = await request(up.url, { dispatcher: agent }).then(
      () => assert.fail('expected a refusal'),
      (e) => e,
    )
    assert.equal(findRejectedError(err)?.reason, 'quota')
    assert.equal(up.requests, 2)
    assert.deepEqual(retries.map((e) => [e.key, e.attempt]), [['k', 2], ['k', 2]])
    assert.deepEqual(refusals.map(({ key, reason, attempt }) => ({ key, reason, attempt })), [
      { key: 'k', reason: 'quota', attempt: 2 },
      { key: 'k', reason: 'quota', attempt: 2 },
    ])
    // A first attempt refused by the quota: no attempt field.
    await assert.rejects(rx.execute(get(up.url), { key: 'k' }), (e) => findRejectedError(e)?.reason === 'quota')
    assert.equal(refusals.length, 3)
    assert.equal('attempt' in refusals[2], false)
  } finally {
    await agent.close()
    rx.close()
    agentRx.close()
    await up.close()
  }
})

test('a first attempt with its own attemptTimeoutMs refused after waiting in the queue rejects with its RejectedError, told without attempt', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, throttle: false, breaker: { consecutiveFailures: 1 } })
  const refusals = []
  rx.onReject((e) => refusals.push(e))
  try {
    const held = await rx.acquire('k')
    let ran = 0
    const call = rx.execute(async () => ran++, { key: 'k', retry: { ...RETRY, attemptTimeoutMs: 60_000 } }).then(
      () => assert.fail('expected a refusal'),
      (e) => e,
    )
    assert.equal(rx.stats('k').queued, 1)
    held.release('failure') // opens the breaker: the waiter's turn comes and it is refused
    const err = await call
    assert.equal(findRejectedError(err)?.reason, 'breaker')
    assert.equal(ran, 0)
    assert.deepEqual(refusals, [{ key: 'k', reason: 'breaker', priority: 'normal' }])
  } finally {
    rx.close()
  }
})
