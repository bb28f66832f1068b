// A refusal of ours through the official SDKs (openai, @anthropic-ai/sdk) with their real
// clients against a local mock: both read a fetch error whose text matches /timed? ?out/i as
// their own connection timeout, and Anthropic's then drops the cause. A refusal's message never
// says so, so it arrives as the SDK's connection error with our RejectedError in its cause
// chain, where findRejectedError finds it (ADR 0812).
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { Agent, fetch, request } from 'undici'
import OpenAI from 'openai'
import Anthropic from '@anthropic-ai/sdk'
import { Resilix, RejectedError, findRejectedError, isRejectedError } from 'resilix'
import { interceptor } from 'resilix/undici'

/** A mock of both APIs: every request answered after `ms` with a body each SDK accepts. */
async function mockApi(ms) {
  const paths = []
  const server = createServer(async (req, res) => {
    paths.push(req.url)
    for await (const _ of req);
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 0,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'hi' }],
          stop_reason: 'end_turn',
          usage: { prompt_tokens: 1, completion_tokens: 1, input_tokens: 1, output_tokens: 1 },
        }),
      )
    }, ms)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${server.address().port}`
  return { origin, paths, close: () => new Promise((r) => server.close(r)) }
}

const SDKS = {
  openai: {
    client: (origin, f) => new OpenAI({ apiKey: 'test', baseURL: `${origin}/v1`, maxRetries: 0, fetch: f }),
    call: (c) => c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    ConnectionError: OpenAI.APIConnectionError,
    TimeoutError: OpenAI.APIConnectionTimeoutError,
  },
  anthropic: {
    client: (origin, f) => new Anthropic({ apiKey: 'test', baseURL: origin, maxRetries: 0, fetch: f }),
    call: (c) => c.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    ConnectionError: Anthropic.APIConnectionError,
    TimeoutError: Anthropic.APIConnectionTimeoutError,
  },
}

for (const [name, sdk] of Object.entries(SDKS)) {
  test(`${name}: a queue refusal (its deadline cannot be met) is the SDK's connection error, and findRejectedError finds it`, async () => {
    const api = await mockApi(300)
    // One slot; the upstream takes 300 ms, so a request with 100 ms to go cannot leave the queue in time.
    const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1 })
    const slow = new Agent().compose(interceptor(rx, { timeoutMs: 5000 }))
    const tight = new Agent().compose(interceptor(rx, { timeoutMs: 100 }))
    try {
      for (let i = 0; i < 3; i++) await (await request(`${api.origin}/warm`, { dispatcher: slow })).body.text()
      const held = request(`${api.origin}/held`, { dispatcher: slow })
      const client = sdk.client(api.origin, (url, init) => fetch(url, { ...init, dispatcher: tight }))
      const err = await sdk.call(client).then(
        () => assert.fail('the request was admitted'),
        (e) => e,
      )
      await (await held).body.text()
      assert.ok(err instanceof sdk.ConnectionError, `${err?.constructor?.name}: ${err?.message}`)
      assert.ok(!(err instanceof sdk.TimeoutError), `read as the SDK's own timeout: ${err.message}`)
      assert.ok(isRejectedError(err))
      const refusal = findRejectedError(err)
      assert.ok(refusal instanceof RejectedError)
      assert.equal(refusal.reason, 'queue')
      assert.equal(refusal.key, api.origin)
      assert.match(refusal.message, /could not leave the queue before its deadline/)
      assert.deepEqual(api.paths, ['/warm', '/warm', '/warm', '/held'], 'the refused request never reached the upstream')
      assert.equal(rx.stats(api.origin).rejections.queue, 1)
    } finally {
      await slow.close()
      await tight.close()
      rx.close()
      await api.close()
    }
  })

  test(`${name}: a quota refusal (the budget cannot come back before its deadline) is found the same way`, async () => {
    const api = await mockApi(5)
    const rx = new Resilix({ quota: { requests: 1, windowMs: 60_000 } })
    const agent = new Agent().compose(interceptor(rx, { timeoutMs: 200 }))
    try {
      const client = sdk.client(api.origin, (url, init) => fetch(url, { ...init, dispatcher: agent }))
      await sdk.call(client)
      const err = await sdk.call(client).then(
        () => assert.fail('the second request was admitted past the budget'),
        (e) => e,
      )
      assert.ok(err instanceof sdk.ConnectionError && !(err instanceof sdk.TimeoutError), `${err?.constructor?.name}: ${err?.message}`)
      const refusal = findRejectedError(err)
      assert.equal(refusal?.reason, 'quota')
      assert.match(refusal.message, /could not fit before its deadline/)
      assert.equal(api.paths.length, 1, 'the refused request never reached the upstream')
    } finally {
      await agent.close()
      rx.close()
      await api.close()
    }
  })

  test(`${name}: a limit refusal (queueing off) is found the same way`, async () => {
    const api = await mockApi(300)
    const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false })
    const agent = new Agent().compose(interceptor(rx))
    try {
      const client = sdk.client(api.origin, (url, init) => fetch(url, { ...init, dispatcher: agent }))
      const [first, second] = await Promise.allSettled([sdk.call(client), sdk.call(client)])
      assert.equal(first.status, 'fulfilled')
      assert.equal(second.status, 'rejected')
      assert.ok(second.reason instanceof sdk.ConnectionError && !(second.reason instanceof sdk.TimeoutError), second.reason.message)
      assert.equal(findRejectedError(second.reason)?.reason, 'limit')
      assert.equal(api.paths.length, 1)
    } finally {
      await agent.close()
      rx.close()
      await api.close()
    }
  })
}

test('no refusal message reads as a timeout to an SDK (/timed? ?out/i)', () => {
  for (const reason of ['limit', 'queue', 'bulkhead', 'breaker', 'registry', 'throttle', 'quota']) {
    const e = new RejectedError(reason, 'https://api.example.com')
    assert.doesNotMatch(`${e}`, /timed? ?out/i, reason)
  }
})
