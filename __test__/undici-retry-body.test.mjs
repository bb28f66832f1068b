// Retry through the undici interceptor when the request has a body: fetch hands every body to
// the dispatcher as a stream, so a body of known size up to `replayBodyBytes` is read into
// memory and sent again; a larger one, or one of unknown size, is sent once and counted in
// stats(key).retryBodyRefusals (ADR 0811). Real local upstreams, real fetch, request() and the
// official openai client.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Readable } from 'node:stream'
import { test } from 'node:test'
import { Agent, FormData, fetch, request } from 'undici'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { Resilix, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'

/** A server whose n-th request (1-based) is answered by `answer(n, req, res)`; bodies are read. */
async function upstream(answer) {
  let n = 0
  const bodies = []
  const server = createServer(async (req, res) => {
    const i = ++n
    const chunks = []
    for await (const c of req) chunks.push(c)
    bodies.push(Buffer.concat(chunks).toString())
    answer(i, req, res)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    origin: `http://127.0.0.1:${server.address().port}`,
    bodies,
    get requests() {
      return n
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

/** 503 to the first request, then 200 `ok`. */
const once503 = (n, req, res) => (n === 1 ? res.writeHead(503).end('busy') : res.end('ok'))

async function withAgent(options, fn) {
  const rx = new Resilix({ retry: true })
  const agent = new Agent().compose(interceptor(rx, { retryMethods: ['POST'], ...options }))
  try {
    return await fn(agent, rx)
  } finally {
    await agent.close()
    rx.close()
  }
}

test('fetch: a POST with a string, JSON, bytes, FormData or URLSearchParams body answered 503 then 200 answers 200', async () => {
  const form = new FormData()
  form.set('name', 'resilix')
  form.set('file', new Blob(['abc']), 'a.txt')
  const bodies = ['order=1', JSON.stringify({ model: 'm', messages: ['hi'] }), Buffer.from('bytes'), form, new URLSearchParams('a=1&b=2')]
  for (const body of bodies) {
    const up = await upstream(once503)
    await withAgent(undefined, async (agent, rx) => {
      const res = await fetch(up.url, { method: 'POST', body, dispatcher: agent })
      assert.equal(res.status, 200, `${body.constructor.name}: the retry answered`)
      assert.equal(await res.text(), 'ok')
      assert.equal(up.requests, 2)
      assert.equal(up.bodies[1], up.bodies[0], 'the same body both times')
      assert.ok(up.bodies[0].length > 0)
      const s = rx.stats(up.origin)
      assert.deepEqual([s.inflight, s.retries, s.retryBodyRefusals], [0, 1, 0])
    })
    await up.close()
  }
})

test('request(): a stream body with a content-length answered 429 then 200 is sent again; FormData too', async () => {
  const up = await upstream((n, req, res) => (n === 1 ? res.writeHead(429).end('slow down') : res.end('ok')))
  await withAgent(undefined, async (agent) => {
    const res = await request(up.url, {
      dispatcher: agent,
      method: 'POST',
      headers: { 'Content-Length': '6' },
      body: Readable.from([Buffer.from('ab'), 'cd', Buffer.from('ef')]),
    })
    assert.equal(res.statusCode, 200)
    await res.body.text()
    assert.deepEqual(up.bodies, ['abcdef', 'abcdef'])
    const form = new FormData()
    form.set('q', 'x')
    const again = await request(up.url, { dispatcher: agent, method: 'POST', body: form })
    await again.body.text()
    assert.equal(up.requests, 3, 'FormData: the 200 at once')
  })
  await up.close()
  const up2 = await upstream((n, req, res) => (n === 1 ? res.writeHead(503).end() : res.end('ok')))
  await withAgent(undefined, async (agent) => {
    const form = new FormData()
    form.set('q', 'x')
    const res = await request(up2.url, { dispatcher: agent, method: 'POST', body: form })
    assert.equal(res.statusCode, 200)
    await res.body.text()
    assert.equal(up2.requests, 2)
    assert.match(up2.bodies[1], /name="q"/)
  })
  await up2.close()
})

test('a body of unknown size, or larger than replayBodyBytes, is sent once and counted in retryBodyRefusals', async () => {
  const up = await upstream((n, req, res) => res.writeHead(503).end('busy'))
  await withAgent({ replayBodyBytes: 1000 }, async (agent, rx) => {
    // fetch of a ReadableStream: no content-length.
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'))
        c.close()
      },
    })
    const a = await fetch(up.url, { method: 'POST', body: stream, duplex: 'half', dispatcher: agent })
    assert.equal(a.status, 503)
    await a.text()
    // A Readable without a content-length, through request().
    const b = await request(up.url, { dispatcher: agent, method: 'POST', body: Readable.from(['x', 'y']) })
    assert.equal(b.statusCode, 503)
    await b.body.text()
    // 1001 bytes of JSON: over the bound.
    const big = JSON.stringify({ p: 'z'.repeat(1001 - 8) })
    assert.equal(big.length, 1001)
    const c = await fetch(up.url, { method: 'POST', body: big, dispatcher: agent })
    assert.equal(c.status, 503)
    await c.text()
    assert.equal(up.requests, 3, 'each sent once')
    assert.deepEqual(up.bodies, ['streamed', 'xy', big])
    const s = rx.stats(up.origin)
    assert.deepEqual([s.inflight, s.retries, s.retryBodyRefusals, s.verdicts.overload], [0, 0, 3, 3])
  })
  await up.close()
  // At the bound it is sent again.
  const up2 = await upstream(once503)
  await withAgent({ replayBodyBytes: 1000 }, async (agent, rx) => {
    const body = JSON.stringify({ p: 'z'.repeat(1000 - 8) })
    const res = await fetch(up2.url, { method: 'POST', body, dispatcher: agent })
    assert.equal(res.status, 200)
    await res.text()
    assert.deepEqual(up2.bodies, [body, body])
    assert.equal(rx.stats(up2.origin).retryBodyRefusals, 0)
  })
  await up2.close()
})

test('a response the policy does not retry is not counted as a body refusal', async () => {
  const up = await upstream((n, req, res) => res.writeHead(400).end('bad'))
  await withAgent({ replayBodyBytes: 0 }, async (agent, rx) => {
    const res = await fetch(up.url, { method: 'POST', body: 'x', dispatcher: agent })
    assert.equal(res.status, 400)
    await res.text()
    assert.equal(rx.stats(up.origin).retryBodyRefusals, 0)
  })
  await up.close()
})

test('reading a stream body keeps the deadline, the caller\'s abort and close(); nothing is sent', async () => {
  const up = await upstream((n, req, res) => res.end('ok'))
  await withAgent({ timeoutMs: 300 }, async (agent, rx) => {
    // Declares 10 bytes, sends 2, then nothing.
    const stalled = new Readable({ read() {} })
    stalled.push('ab')
    await assert.rejects(
      request(up.url, { dispatcher: agent, method: 'POST', headers: { 'content-length': '10' }, body: stalled }),
      (e) => isTimeoutError(e) && e.timeoutMs === 300,
    )
    assert.ok(stalled.destroyed, 'the body stream is destroyed')
    const ac = new AbortController()
    const stalled2 = new Readable({ read() {} })
    setTimeout(() => ac.abort(new Error('caller gave up')), 50)
    await assert.rejects(
      request(up.url, { dispatcher: agent, method: 'POST', headers: { 'content-length': '10' }, body: stalled2, signal: ac.signal }),
      /caller gave up/,
    )
    assert.equal(up.requests, 0)
    assert.equal(rx.stats(up.origin), undefined, 'no permit was ever taken')
  })
  // close() ends a read as it ends a backoff.
  const rx = new Resilix({ retry: true })
  const agent = new Agent().compose(interceptor(rx, { retryMethods: ['POST'] }))
  const stalled = new Readable({ read() {} })
  setTimeout(() => rx.close(), 50)
  await assert.rejects(
    request(up.url, { dispatcher: agent, method: 'POST', headers: { 'content-length': '10' }, body: stalled }),
    (e) => e.code === 'ERR_RESILIX_CLOSED' && /reading its body/.test(e.message),
  )
  assert.ok(stalled.destroyed)
  assert.equal(rx._backoffs.size, 0)
  assert.equal(up.requests, 0)
  await agent.close()
  await up.close()
})

test('a body stream that fails while it is read fails the request; nothing is sent', async () => {
  const up = await upstream((n, req, res) => res.end('ok'))
  await withAgent(undefined, async (agent) => {
    const body = new Readable({
      read() {
        this.destroy(new Error('disk gone'))
      },
    })
    await assert.rejects(request(up.url, { dispatcher: agent, method: 'POST', headers: { 'content-length': '4' }, body }), /disk gone/)
    assert.equal(up.requests, 0)
  })
  await up.close()
})

test('openai: with the SDK\'s retries off, a completion answered 429 then 200 answers 200', async () => {
  const completion = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  }
  const up = await upstream((n, req, res) => {
    if (n === 1) return res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '50' }).end('{"error":{"message":"rate limited"}}')
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion))
  })
  await withAgent(undefined, async (agent, rx) => {
    const client = new OpenAI({
      apiKey: 'test',
      baseURL: `${up.origin}/v1`,
      maxRetries: 0,
      fetch: (url, init) => fetch(url, { ...init, dispatcher: agent }),
    })
    const out = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
    assert.equal(out.choices[0].message.content, 'hello')
    assert.equal(up.requests, 2)
    assert.equal(up.bodies[1], up.bodies[0])
    assert.equal(JSON.parse(up.bodies[1]).messages[0].content, 'hi')
    assert.equal(rx.stats(up.origin).retries, 1)
  })
  await up.close()
})

test("openai with the runtime's own fetch (fetchOptions.dispatcher): 429 then 200 answers 200", async () => {
  const up = await upstream((n, req, res) => {
    if (n === 1) return res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"rate limited"}}')
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }),
    )
  })
  await withAgent(undefined, async (agent) => {
    const client = new OpenAI({ apiKey: 'test', baseURL: `${up.origin}/v1`, maxRetries: 0, fetchOptions: { dispatcher: agent } })
    const out = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    assert.equal(out.choices[0].message.content, 'ok')
    assert.equal(up.requests, 2)
    assert.equal(up.bodies[1], up.bodies[0])
  })
  await up.close()
})

test("anthropic: with the SDK's retries off, a message answered 429 then 200 answers 200", async () => {
  const up = await upstream((n, req, res) => {
    if (n === 1) return res.writeHead(429, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}')
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 1 } }),
    )
  })
  await withAgent(undefined, async (agent) => {
    const client = new Anthropic({ apiKey: 'test', baseURL: up.origin, maxRetries: 0, fetch: (url, init) => fetch(url, { ...init, dispatcher: agent }) })
    const out = await client.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
    assert.equal(out.content[0].text, 'ok')
    assert.equal(up.requests, 2)
    assert.equal(up.bodies[1], up.bodies[0])
  })
  await up.close()
})

test('replayBodyBytes: a whole number of bytes, 0 or more; anything else is refused, named', () => {
  const rx = new Resilix()
  for (const bad of [-1, 1.5, '1MiB', Infinity, null]) {
    assert.throws(() => interceptor(rx, { replayBodyBytes: bad }), (e) => e instanceof TypeError && /option replayBodyBytes must be a whole number of bytes/.test(e.message))
  }
  interceptor(rx, { replayBodyBytes: 0 })
  interceptor(rx, { replayBodyBytes: 8 << 20 })
  rx.close()
})

test('a body whose properties throw is sent once, for undici to judge: no crash, no slot held', async () => {
  const up = await upstream((n, req, res) => res.end('ok'))
  await withAgent(undefined, async (agent, rx) => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('hostile getter')
        },
      },
    )
    const err = await request(up.url, { dispatcher: agent, method: 'POST', body: hostile }).catch((e) => e)
    assert.ok(err instanceof Error, String(err))
    const s = rx.stats(up.origin)
    assert.equal(s === undefined ? 0 : s.inflight, 0)
  })
  await up.close()
})
