// Bad retry options get a clear error naming the problem: instance-wide, per call (a rejected
// promise, never a synchronous throw), the budget (ranges checked by the engine) and the
// interceptor's.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { interceptor } from '../undici.js'

const throwsWith = (f, type, re) => assert.throws(f, (e) => e instanceof type && re.test(e.message))

test('instance retry options: types, ranges and unknown names are named', () => {
  throwsWith(() => new Resilix({ retry: 3 }), TypeError, /option retry must be true, false or an object/)
  throwsWith(() => new Resilix({ retry: { attempts: '3' } }), TypeError, /option retry.attempts must be a number, got the string "3"/)
  throwsWith(() => new Resilix({ retry: { attempts: 0 } }), RangeError, /retry.attempts must be a whole number from 1 to 1000 \(attempts in all, the first included\), got 0/)
  throwsWith(() => new Resilix({ retry: { attempts: 2.5 } }), RangeError, /retry.attempts must be a whole number/)
  throwsWith(() => new Resilix({ retry: { backoff: 'exponential' } }), TypeError, /retry.backoff must be 'full' or 'decorrelated'/)
  throwsWith(() => new Resilix({ retry: { baseMs: -1 } }), RangeError, /retry.baseMs must be a number of milliseconds from 0/)
  throwsWith(() => new Resilix({ retry: { baseMs: NaN } }), RangeError, /retry.baseMs/)
  throwsWith(() => new Resilix({ retry: { baseMs: 500 } }), RangeError, /retry.baseMs \(500\) must not exceed retry.maxDelayMs \(250\)/)
  throwsWith(() => new Resilix({ retry: { maxRetryAfterMs: Infinity } }), RangeError, /retry.maxRetryAfterMs/)
  throwsWith(() => new Resilix({ retry: { attemptTimeoutMs: 0 } }), RangeError, /retry.attemptTimeoutMs must be a number of milliseconds above 0/)
  throwsWith(() => new Resilix({ retry: { retryOn: 'overload' } }), TypeError, /retry.retryOn must be an array of verdicts/)
  throwsWith(() => new Resilix({ retry: { retryOn: ['answered'] } }), RangeError, /must not contain 'answered': the upstream answered/)
  throwsWith(() => new Resilix({ retry: { retryOn: ['success'] } }), RangeError, /retry.retryOn may contain 'failure', 'overload', 'timeout', got the string "success"/)
  throwsWith(() => new Resilix({ retry: { maxAttempts: 3 } }), TypeError, /unknown option retry.maxAttempts: did you mean retry.attempts\? \(cockatiel's maxAttempts counts retries/)
  throwsWith(() => new Resilix({ retry: { limit: 2 } }), TypeError, /did you mean retry.attempts\? \(got's limit counts retries/)
  throwsWith(() => new Resilix({ retry: { ratio: 0.1 } }), TypeError, /the retry budget is an instance option, retryBudget/)
  throwsWith(() => new Resilix({ retries: 3 }), TypeError, /unknown option retries: did you mean retry: \{ attempts \}\?/)
  // Well-formed options pass; attemptTimeoutMs: false is none.
  new Resilix({ retry: { attempts: 1, backoff: 'decorrelated', baseMs: 0, maxDelayMs: 0, retryOn: ['timeout'], attemptTimeoutMs: false } }).close()
})

test('retryBudget: types and unknown names in JS, ranges from the engine, each named', () => {
  throwsWith(() => new Resilix({ retryBudget: 0.2 }), TypeError, /option retryBudget must be an object \{ ratio, minPerSecond, windowMs \}/)
  throwsWith(() => new Resilix({ retryBudget: { ratio: '0.2' } }), TypeError, /option retryBudget.ratio must be a number/)
  throwsWith(() => new Resilix({ retryBudget: { ratoi: 0.2 } }), TypeError, /unknown option retryBudget.ratoi: did you mean retryBudget.ratio\?/)
  throwsWith(() => new Resilix({ retryBudget: { ratio: -0.1 } }), RangeError, /retryBudget.ratio must be a number from 0 to 10, got -0.1/)
  throwsWith(() => new Resilix({ retryBudget: { minPerSecond: NaN } }), RangeError, /retryBudget.minPerSecond must be a number from 0 to 1000000/)
  throwsWith(() => new Resilix({ retryBudget: { windowMs: 50 } }), RangeError, /retryBudget.windowMs must be an integer from 100/)
  throwsWith(() => new Resilix({ retryBudget: { windowMs: 1000.5 } }), RangeError, /retryBudget.windowMs must be a whole number/)
})

test('a call’s retry option: a bad one rejects, naming it; acquire() is told retry is execute’s', async () => {
  const rx = new Resilix()
  try {
    let ran = false
    const p = rx.execute(() => (ran = true), { retry: { attempts: -1 } })
    assert.ok(p instanceof Promise)
    await assert.rejects(p, (e) => e instanceof RangeError && /retry.attempts must be a whole number/.test(e.message))
    await assert.rejects(rx.execute(() => 1, { retry: 'yes' }), /execute option retry must be true, false or an object/)
    await assert.rejects(rx.execute(() => 1, { retries: 2 }), /unknown execute option retries .*did you mean retry: \{ attempts \}\?/)
    await assert.rejects(rx.acquire('k', { retry: true }), /unknown acquire option retry .*a permit is one attempt; retry is an option of execute\(\)/)
    assert.equal(ran, false)
    // The same object twice is read once and still applies.
    const policy = { attempts: 2, baseMs: 0, maxDelayMs: 0 }
    for (let i = 0; i < 2; i++) {
      let n = 0
      await assert.rejects(rx.execute(async () => Promise.reject(new Error(`try ${++n}`)), { key: 'k', retry: policy }), /try 2/)
    }
  } finally {
    rx.close()
  }
})

test('interceptor retry options are checked when it is built', () => {
  const rx = new Resilix()
  try {
    throwsWith(() => interceptor(rx, { retry: 'always' }), TypeError, /interceptor option retry must be true, false or an object/)
    throwsWith(() => interceptor(rx, { retry: { attempts: 0 } }), RangeError, /retry.attempts must be a whole number/)
    throwsWith(() => interceptor(rx, { retryMethods: 'GET' }), TypeError, /option retryMethods must be an array of HTTP method names/)
    throwsWith(() => interceptor(rx, { retryMethods: ['GET', ''] }), TypeError, /retryMethods/)
    interceptor(rx, { retry: { attempts: 2 }, retryMethods: ['get', 'post'] })
  } finally {
    rx.close()
  }
})
