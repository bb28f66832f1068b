// How a fleet shares one real upstream: N Node processes, each its own Resilix with default
// options and 64 closed-loop callers through fetch, on an upstream that serves C at once
// (100 ms each), starting at random within 3 s; judged over the last 15 s of 50 s runs.
// Prints one line a run (fairFleetLine).
//   node benches/fleet/run.mjs [processes=4] [capacity=32] [runs=5] [seed=1]
import { fairFleetLine, runFairFleet } from './fleet.mjs'

const [n = 4, capacity = 32, runs = 5, seed0 = 1] = process.argv.slice(2).map(Number)
for (let i = 0; i < runs; i++) {
  console.log(fairFleetLine(await runFairFleet({ n, capacity, seed: seed0 + i })))
}
