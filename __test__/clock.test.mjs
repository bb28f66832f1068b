// The binding's clock (src/binding/clock.rs, ADR 0504): where the kernel keeps time with the TSC
// it switches to the counter after 50 ms of use, keeps Instant's rate, and never goes back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const native = createRequire(import.meta.url)('../native.js')

function kernelUsesTsc() {
  try {
    return process.arch === 'x64' && process.platform === 'linux' &&
      readFileSync('/sys/devices/system/clocksource/clocksource0/current_clocksource', 'utf8').trim() === 'tsc'
  } catch {
    return false
  }
}

test('clock: never goes backwards, across the switch to the TSC too', () => {
  let prev = native.nowMs()
  const until = performance.now() + 120
  let reads = 0
  while (performance.now() < until || reads < 100_000) {
    const t = native.nowMs()
    assert.ok(t >= prev, `clock went back from ${prev} to ${t}`)
    prev = t
    reads++
  }
})

test('clock: reads the TSC where the kernel does, at Instant\'s rate within 1e-4', () => {
  native.nowMs()
  native.clockRateAgainstInstant(60) // past the 50 ms calibration
  assert.equal(native.clockSource(), kernelUsesTsc() ? 'tsc' : 'instant')
  // A busy machine may preempt between the two readings of a pair: the best of five.
  const rates = Array.from({ length: 5 }, () => native.clockRateAgainstInstant(50))
  const best = rates.reduce((a, r) => (Math.abs(r - 1) < Math.abs(a - 1) ? r : a))
  assert.ok(Math.abs(best - 1) < 1e-4, `rate against Instant ${rates.join(', ')}`)
})
