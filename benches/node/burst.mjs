// A burst on a new key, and sustained overload on a new key, with the default options (ADR 0607).
//   node benches/node/burst.mjs
// burst: Promise.allSettled over N calls of a 5 ms fn on a fresh key: how many are shed.
// overload: open-loop arrivals at 2x an upstream's capacity (10 concurrent, 5 ms each, FIFO
// beyond), no deadline, for 2 s on a fresh key: the peak of our queue and its size at the end.
import { Resilix } from '../../index.js'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function burst(n) {
  const rx = new Resilix()
  const t0 = performance.now()
  const outs = await Promise.allSettled(Array.from({ length: n }, () => rx.execute(() => sleep(5), { key: 'api' })))
  const shed = outs.filter((o) => o.status === 'rejected').length
  return { n, shed, ms: Math.round(performance.now() - t0) }
}

/** An upstream with `slots` concurrent places, `ms` each; the rest wait inside it. */
function upstream(slots, ms) {
  let busy = 0
  const waiting = []
  const done = () => {
    busy--
    if (waiting.length > 0) {
      busy++
      const r = waiting.shift()
      setTimeout(() => { done(); r() }, ms)
    }
  }
  return () => new Promise((r) => {
    if (busy < slots) {
      busy++
      setTimeout(() => { done(); r() }, ms)
    } else waiting.push(r)
  })
}

async function overload() {
  const rx = new Resilix()
  const call = upstream(10, 5) // capacity 2 000/s
  let peak = 0
  let shed = 0
  const ps = []
  const end = performance.now() + 2000
  while (performance.now() < end) {
    for (let i = 0; i < 40; i++) ps.push(rx.execute(call, { key: 'api' }).catch(() => shed++)) // 40 per 10 ms
    const s = rx.stats('api')
    peak = Math.max(peak, s.queued)
    await sleep(10)
  }
  const last = rx.stats('api')
  await Promise.all(ps)
  return { peakQueued: peak, endQueued: last.queued, endLimit: last.limit, shed, calls: ps.length }
}

for (const n of [100, 1000, 2000]) console.log('burst', JSON.stringify(await burst(n)))
console.log('overload', JSON.stringify(await overload()))
