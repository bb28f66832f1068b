import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'

// [options, error class, text the message must contain (the option's name and its range)]
const bad = [
  ['not an object', TypeError, 'options must be an object'],
  [{ algorithm: 'nope' }, TypeError, 'algorithm must be one of'],
  [{ algoritm: 'vegas' }, TypeError, 'unknown option algoritm'],
  [{ initialLimit: '20' }, TypeError, 'initialLimit must be a number'],
  [{ minLimit: 0 }, RangeError, 'minLimit must be an integer from 1'],
  [{ maxLimit: 1e9 }, RangeError, 'maxLimit must be an integer from 1 to 1000000'],
  [{ minLimit: 10, maxLimit: 5, initialLimit: 5 }, RangeError, 'minLimit (10) must not exceed maxLimit (5)'],
  [{ initialLimit: 500 }, RangeError, 'initialLimit must be an integer from minLimit (4) to maxLimit (200)'],
  [{ initialLimit: 2.5 }, RangeError, 'initialLimit must be a whole number'],
  [{ initialLimit: NaN }, RangeError, 'initialLimit'],
  [{ quantile: 0 }, RangeError, 'quantile must be a number above 0 to 1'],
  [{ quantile: 1.5 }, RangeError, 'quantile'],
  [{ smoothing: Infinity }, RangeError, 'smoothing'],
  [{ rttTolerance: 0.5 }, RangeError, 'rttTolerance must be a number from 1 to 100'],
  [{ windowMinMs: 5000, windowMaxMs: 1000 }, RangeError, 'windowMinMs (5000) must not exceed windowMaxMs (1000)'],
  [{ minSamples: 0 }, RangeError, 'minSamples must be an integer from 1'],
  [{ probeIntervalMs: 500 }, RangeError, 'probeIntervalMs must be 0 (never) or an integer from 1000'],
  [{ updateIntervalMs: -1 }, RangeError, 'updateIntervalMs'],
  [{ backoffRatio: 1 }, RangeError, 'backoffRatio must be a number above 0 and below 1'],
  [{ queue: { initialFactor: 3, maxFactor: 2 } }, RangeError, 'queue.maxFactor (2) must be at least queue.initialFactor (3)'],
  [{ queue: { initialFactor: 0.5 } }, RangeError, 'queue.initialFactor must be a number from 1'],
  [{ queue: { size: 3 } }, TypeError, 'unknown option queue.size'],
  [{ queue: 'yes' }, TypeError, 'option queue must be an object or false'],
  [{ breaker: { failureRate: 0 } }, RangeError, 'breaker.failureRate'],
  [{ breaker: { consecutiveFailures: 0 } }, RangeError, 'breaker.consecutiveFailures must be an integer from 1'],
  [{ breaker: { openMs: 'soon' } }, TypeError, 'breaker.openMs must be a number'],
  [{ breaker: { threshold: 1 } }, TypeError, 'unknown option breaker.threshold'],
  [{ bulkhead: {} }, TypeError, 'bulkhead.maxConcurrent is required'],
  [{ bulkhead: { maxConcurrent: 0 } }, RangeError, 'bulkhead.maxConcurrent must be an integer from 1'],
  [{ bulkhead: 10 }, TypeError, 'option bulkhead must be an object'],
  [{ throttle: { multiplier: 0.5 } }, RangeError, 'throttle.multiplier must be a number from 1 to 100, got 0.5'],
  [{ throttle: { multiplier: NaN } }, RangeError, 'throttle.multiplier must be a number from 1 to 100, got NaN'],
  [{ throttle: { windowMs: 10 } }, RangeError, 'throttle.windowMs must be an integer from 1000 to 2147483647, got 10'],
  [{ throttle: { windowMs: 1500.5 } }, RangeError, 'throttle.windowMs must be a whole number'],
  [{ throttle: { maxRejection: 0 } }, RangeError, 'throttle.maxRejection must be a number above 0 to 1, got 0'],
  [{ throttle: { maxRejection: '0.9' } }, TypeError, 'option throttle.maxRejection must be a number'],
  [{ throttle: { k: 2 } }, TypeError, 'unknown option throttle.k'],
  [{ throttle: 'on' }, TypeError, 'option throttle must be an object or false'],
  [{ multiplier: 2 }, TypeError, 'unknown option multiplier: did you mean throttle.multiplier?'],
  [{ throttle: true }, null, null],
  [{ timeoutMs: 0 }, RangeError, 'timeoutMs must be a number of milliseconds above 0'],
  [{ timeoutMs: '1s' }, TypeError, 'timeoutMs must be a number of milliseconds or false'],
  [{ classify: 'failure' }, TypeError, 'classify must be a function'],
  [{ maxKeys: 0 }, RangeError, 'maxKeys must be an integer from 1 to 100000'],
  [{ limiter: true, }, null, null],
  [{ limiter: false, algorithm: 'vegas' }, TypeError, 'algorithm has no effect with limiter: false'],
  [{ limiter: {} }, TypeError, 'option limiter must be a boolean'],
]

for (const [opts, cls, text] of bad) {
  test(`options ${JSON.stringify(opts)} → ${cls ? cls.name : 'accepted'}`, () => {
    const make = () => new Resilix(opts === 'not an object' ? 'x' : opts)
    if (cls === null) return void make()
    assert.throws(make, (e) => {
      assert.equal(e.constructor, cls, `${e.constructor.name}: ${e.message}`)
      assert.ok(e.message.includes(text), `message "${e.message}" should contain "${text}"`)
      return true
    })
  })
}

test('valid options with every policy on and off', async () => {
  const on = new Resilix({
    algorithm: 'aimd', initialLimit: 8, minLimit: 1, maxLimit: 64, quantile: 0.5, smoothing: 0.5, rttTolerance: 2,
    windowMinMs: 500, windowMaxMs: 5000, minSamples: 10, probeIntervalMs: 20000, updateIntervalMs: 50, backoffRatio: 0.8,
    queue: { initialFactor: 1.5, maxFactor: 2 }, breaker: { consecutiveFailures: 2 }, bulkhead: { maxConcurrent: 5 },
    throttle: { multiplier: 2, windowMs: 60000, maxRejection: 0.8 }, timeoutMs: 1000, maxKeys: 10, maxKeyLength: 64, seed: 7,
  })
  assert.equal(await on.execute(() => 1), 1)
  assert.equal(on.stats('default').limit, 8)
  const off = new Resilix({ limiter: false, breaker: false, bulkhead: false, throttle: false, timeoutMs: false, queue: undefined })
  assert.equal(await off.execute(() => 2), 2)
  const s = off.stats('default')
  assert.equal(s.limit, null)
  assert.equal(s.breaker, null)
  assert.equal(s.algorithm, null)
})
