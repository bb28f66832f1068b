// Processes sharing one real upstream, each its own Resilix with default options and 64
// closed-loop callers through fetch, starting at random within 3 s: once the last has settled
// (the last 15 s of 50 s), each completes an equal share of the calls, and together they keep
// the upstream busy without crowding it. Five starts each of 4 processes on C 32 and of 8 on
// C 64; every run's figures are printed. Run once by `npm test` (its `fleet` step), not under
// every runtime: it measures the limit, which the runtime does not change.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fairFleetLine, runFairFleet } from '../../benches/fleet/fleet.mjs'

const RUNS = 5

for (const [n, capacity] of [
  [4, 32],
  [8, 64],
]) {
  test(`${n} processes on an upstream of C ${capacity} settle at equal shares`, { timeout: 8 * 60_000 }, async () => {
    const missed = []
    for (let seed = 1; seed <= RUNS; seed++) {
      const f = await runFairFleet({ n, capacity, seed })
      console.log(fairFleetLine(f))
      const lines = [
        [f.jain >= 0.95, `Jain ${f.jain.toFixed(3)} < 0.95`],
        [f.sumLimits <= 2 * capacity, `sum of limits ${(f.sumLimits / capacity).toFixed(2)} x C > 2`],
        [f.p90 <= 3 * f.serviceMs, `p90 ${f.p90.toFixed(0)} ms > 3 x ${f.serviceMs} ms`],
        [f.goodput >= 0.85, `goodput ${(f.goodput * 100).toFixed(1)} % < 85 %`],
      ]
      for (const [ok, what] of lines) if (!ok) missed.push(`seed ${seed}: ${what}`)
    }
    assert.deepEqual(missed, [])
  })
}
