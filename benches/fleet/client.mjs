// One process of a fleet (benches/fleet/fleet.mjs): its own Resilix with default
// options, CALLERS closed-loop callers through global fetch, starting after DELAY ms, for MS ms.
// Every 500 ms it prints one JSON line: { t, limit, baseline, done, p90 } (t: wall-clock ms;
// done: calls completed so far; p90: latency inside fn over that half second, ms;
// baseline: the key's no-load latency, ms).
// argv: url, callers, delayMs, ms.
import { Resilix } from '../../index.js'

const [url, callers, delay, ms] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])]
const sleep = (t) => new Promise((r) => setTimeout(r, t))
await sleep(delay)
const rx = new Resilix()
let stop = false
let lat = []
let done = 0
const loop = async () => {
  while (!stop) {
    await rx.execute(async (ctx) => {
      const t = performance.now()
      const r = await fetch(url, { signal: ctx.signal })
      ctx.mark()
      lat.push(performance.now() - t)
      await r.text()
      done++
      return r
    }, { key: 'up' }).catch(() => sleep(50))
  }
}
const loops = Array.from({ length: callers }, loop)
const end = performance.now() + ms
while (performance.now() < end) {
  await sleep(500)
  const l = lat.sort((a, b) => a - b)
  lat = []
  const p90 = l.length ? l[Math.min(l.length - 1, Math.floor(l.length * 0.9))] : 0
  const s = rx.stats('up')
  console.log(JSON.stringify({ t: Date.now(), limit: s?.limit ?? 0, baseline: s?.baselineMs ?? 0, done, p90 }))
}
stop = true
await Promise.all(loops)
