// How a fleet shares one real upstream: N Node processes, each its own Resilix with default
// options and 64 closed-loop callers through fetch, on an upstream that serves C at once
// (100 ms each), starting at random within 3 s; judged over the last 10 s of 25 s runs.
// Prints one line a run: Jain's index of the calls each process completed, the sum of the
// mean limits over C, the median p90 inside fn, goodput, and each process's limit, baseline
// and start delay.
//   node benches/fleet/run.mjs [processes=4] [capacity=32] [runs=5] [seed=1]
import { runFairFleet } from './fleet.mjs'

const [n = 4, capacity = 32, runs = 5, seed0 = 1] = process.argv.slice(2).map(Number)
for (let i = 0; i < runs; i++) {
  const f = await runFairFleet({ n, capacity, seed: seed0 + i })
  const fmt = (xs, d) => xs.map((x) => x.toFixed(d)).join(' ')
  console.log(
    `${n} x C ${capacity}, seed ${seed0 + i}: jain ${f.jain.toFixed(3)}, sum ${(f.sumLimits / capacity).toFixed(2)} x C, ` +
      `p90 ${f.p90.toFixed(0)} ms, goodput ${(f.goodput * 100).toFixed(1)} %; limits ${fmt(f.limits, 1)}; ` +
      `baselines ${fmt(f.baselines, 0)} ms; delays ${f.delays.join(' ')} ms`,
  )
}
