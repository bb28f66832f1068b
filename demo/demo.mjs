// `npm run demo`: a local upstream with a real concurrency bottleneck degrades (its capacity
// halves; latency climbs, no errors) and recovers, while open-loop traffic goes through
// resilix with the library's defaults. A live view while it runs, a chart of the run at the end.
//   npm run demo -- --help
import { performance } from 'node:perf_hooks'
import { relative } from 'node:path'
import { Resilix } from '../index.js'
import { parseDemoArgs, phases as phasesOf, HELP } from './args.mjs'
import { startUpstream } from './upstream.mjs'
import { createAgent, startTraffic, warmUp } from './traffic.mjs'
import { Recorder, summarize } from './recorder.mjs'
import { View } from './view.mjs'
import { writeChart } from './chart.mjs'

const TICK_MS = 250
// `npm run demo | head`: a closed pipe ends the demo quietly.
process.stdout.on('error', (err) => process.exit(err.code === 'EPIPE' ? 0 : 1))

let o
try {
  o = parseDemoArgs()
} catch (err) {
  console.error(err.message + '\n\n' + HELP)
  process.exit(2)
}
if (o.help) {
  console.log(HELP)
  process.exit(0)
}

const phases = phasesOf(o)
const upstream = await startUpstream({ capacity: o.capacity, serviceMs: o.latencyMs })
const key = new URL(upstream.url).host // one key per upstream host: the usual choice
// Library defaults except the algorithm and the deadline: the demo shows what a user gets.
const rx = new Resilix({ algorithm: o.algorithm, timeoutMs: o.timeoutMs, windowMinMs: o.windowMinMs })
const recorder = new Recorder({ rx, key, upstream, tickMs: TICK_MS })
const view = new View({ seconds: o.seconds, algorithm: o.algorithm })
view.start({ ...o, url: upstream.url, degradeAt: phases[1].from, recoverAt: phases[2].from })

const agent = createAgent()
await warmUp(agent, upstream.url, o.capacity)
const startedAt = performance.now()
const unwatch = recorder.watch(startedAt)
const traffic = startTraffic({ rx, url: upstream.url, key, rate: o.rate, timeoutMs: o.timeoutMs, recorder, agent })
let phase = 0
const restoreCursor = () => view.finish()
process.once('exit', restoreCursor)
process.once('SIGINT', () => process.exit(130))

await new Promise((resolve) => {
  const timer = setInterval(() => {
    const t = (performance.now() - startedAt) / 1000
    while (phase + 1 < phases.length && t >= phases[phase + 1].from) {
      phase++
      upstream.set(phases[phase])
    }
    view.update(recorder.tick(Math.min(t, o.seconds), phases[phase]), recorder)
    if (t >= o.seconds) {
      clearInterval(timer)
      resolve()
    }
  }, TICK_MS)
})

await traffic.stop()
unwatch()
view.finish()
await upstream.close()

const t = recorder.totals
const summary = summarize(recorder.series, phases)
const f = (x, d = 0) => (x === null ? '–' : x.toFixed(d))
console.log(`\ndone: ${t.offered} calls offered, ${t.ok} ok, ${t.shed} shed by resilix, ${t.timeouts} timed out (${t.queuedTimeouts} while queued), ${t.errors} errors`)
if (t.errors) console.log(`  last error: ${recorder.lastError?.message}`)
console.log('\nsteady state of each phase (its second half):')
console.log('  phase       capacity  mean limit  p90 upstream  p90 end to end   ok/s  shed %  waiting in upstream')
for (const s of summary) {
  console.log(
    `  ${s.phase.padEnd(10)}  ${String(s.capacity).padStart(8)}  ${f(s.limit, 1).padStart(10)}  ${(f(s.p90UpstreamMs) + ' ms').padStart(12)}  ${(f(s.p90EndToEndMs) + ' ms').padStart(14)}  ${f(s.okPerS).padStart(5)}  ${f(s.shedPct, 1).padStart(6)}  ${f(s.upstreamWaiting, 1).padStart(19)}`,
  )
}

if (o.out) {
  const title = `resilix (${o.algorithm}) in front of an upstream whose capacity halves and recovers`
  const path = await writeChart(o.out, { title, options: o, phases, summary, totals: t, series: recorder.series })
  console.log(`\nchart: ${relative(process.cwd(), path) || path}`)
}
// Everything is closed; should a socket linger, do not keep the terminal waiting for it.
setTimeout(() => process.exit(0), 2000).unref()
