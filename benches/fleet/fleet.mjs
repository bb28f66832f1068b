// A fleet of processes (__test__/fixtures/fleet-client.mjs), each its own Resilix with default
// options, sharing one real upstream (__test__/fixtures/upstream-server.cjs), and the figures the fleet's
// fairness is judged by over its last seconds.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { startUpstream } from '../../__test__/fixtures/upstream.mjs'
import { prng } from '../../__test__/fixtures/prng.mjs'

const client = fileURLToPath(new URL('../../__test__/fixtures/fleet-client.mjs', import.meta.url))

function runClient(url, callers, delayMs, ms) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [client, url, String(callers), String(delayMs), String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('close', (code) => {
      try {
        resolve(out.trim().split('\n').map((l) => JSON.parse(l)))
      } catch {
        reject(new Error(`a fleet process exited with ${code} and no report: ${out.slice(-500)}`))
      }
    })
  })
}

export const jain = (xs) => xs.reduce((a, b) => a + b, 0) ** 2 / (xs.length * xs.reduce((a, b) => a + b * b, 0))
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length

/**
 * `n` processes of `callers` each on one upstream of `capacity` (`serviceMs` each), starting at
 * random within `staggerMs` (from `seed`) and all ending `totalMs` after the first could start.
 * Judged over the last `judgeMs`: Jain's index of the calls each process completed, the mean sum
 * of the limits, the median of the half-second p90s, goodput as a share of the capacity. Also
 * Jain's index over `early` (ms after the start) and `settledS`: the time from the start after
 * which the Jain's index of every 5 s stays at 0.95 or more (null: not by the end).
 */
export async function runFairFleet({ n, capacity, serviceMs = 100, callers = 64, staggerMs = 3000, totalMs = 50_000, judgeMs = 15_000, early = [15_000, 25_000], seed = 1 }) {
  const up = await startUpstream(0, capacity, serviceMs)
  try {
    const url = `http://127.0.0.1:${up.port}/`
    const r = prng(seed)
    const delays = Array.from({ length: n }, () => Math.round(r() * staggerMs))
    const start = Date.now()
    const reports = await Promise.all(delays.map((d) => runClient(url, callers, d, totalMs - d)))
    const end = Math.min(...reports.map((rep) => rep.at(-1).t))
    const from = end - judgeMs
    const at = (rep, t) => rep.reduce((best, x) => (Math.abs(x.t - t) < Math.abs(best.t - t) ? x : best))
    const doneIn = (a, b) => reports.map((rep) => at(rep, b).done - at(rep, a).done)
    const done = doneIn(from, end)
    let settled = null
    for (let t = end; t - 5000 >= start + Math.max(...delays); t -= 500) {
      if (jain(doneIn(t - 5000, t)) < 0.95) break
      settled = t - 5000
    }
    const span = (at(reports[0], end).t - at(reports[0], from).t) / 1000
    const inJudged = reports.map((rep) => rep.filter((x) => x.t > from && x.t <= end))
    const limits = inJudged.map((xs) => mean(xs.map((x) => x.limit)))
    const p90s = inJudged.flatMap((xs) => xs.map((x) => x.p90)).sort((a, b) => a - b)
    return {
      n,
      capacity,
      serviceMs,
      seed,
      delays,
      done,
      jain: jain(done),
      early,
      earlyJain: jain(doneIn(start + early[0], start + early[1])),
      settledS: settled === null ? null : (settled - start) / 1000,
      limits,
      sumLimits: limits.reduce((a, b) => a + b, 0),
      baselines: inJudged.map((xs) => xs.at(-1).baseline),
      p90: p90s[Math.floor(p90s.length / 2)],
      goodput: done.reduce((a, b) => a + b, 0) / ((capacity * 1000 * span) / serviceMs),
      reports,
    }
  } finally {
    up.child.kill('SIGKILL')
    await once(up.child, 'exit')
  }
}

/** One run's figures on one line. */
export function fairFleetLine(f) {
  const fmt = (xs, d) => xs.map((x) => x.toFixed(d)).join(' ')
  return (
    `${f.n} x C ${f.capacity}, seed ${f.seed}: jain ${f.jain.toFixed(3)}, sum ${(f.sumLimits / f.capacity).toFixed(2)} x C, ` +
    `p90 ${f.p90.toFixed(0)} ms, goodput ${(f.goodput * 100).toFixed(1)} %; at ${f.early.map((t) => t / 1000).join('-')} s jain ${f.earlyJain.toFixed(3)}; ` +
    `settled ${f.settledS === null ? 'never' : `from ${f.settledS.toFixed(1)} s`}; limits ${fmt(f.limits, 1)}; ` +
    `baselines ${fmt(f.baselines, 0)} ms; delays ${f.delays.join(' ')} ms`
  )
}
