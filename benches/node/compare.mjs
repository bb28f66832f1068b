// `npm run bench:compare`: resilix against its JS peers, one fresh process per case per round.
//
// For each Node runtime and each of N rounds, every case runs in its own child process, in
// round-robin order (the start rotates every round, and the runtimes take turns inside a round).
// A child measures its case and, interleaved with it, its own bare `await work()`; it reports
// the minimum of its repetitions. The parent keeps the minimum overhead (and the maximum calls/s)
// per case across rounds: on a shared machine noise only ever adds time, and one process's JIT
// luck no longer decides a ratio.
//
//   node benches/node/compare.mjs [--node 20,24] [--rounds 5] [--quick] [--wall]
//                                 [--baseline /path/to/other/checkout]
//
// --node: majors or paths of Node binaries (default: the running Node and node_modules/node24);
//   majors are looked up as in scripts/node-versions.mjs (the running Node, node22, node24) and on PATH.
// --baseline: adds that checkout's resilix rows (it needs its own built addon).
// Times are CPU time of the child (process.cpuUsage); --wall uses wall time instead.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { work, RESILIX, CALL_OPTIONS, PEERS, resilixRun, loadResilix, sequential, concurrent, clock, subscribeToCalls } from './contenders.mjs'
import { nodeVersions } from '../../scripts/node-versions.mjs'

const self = fileURLToPath(import.meta.url)
const root = resolve(self, '../../..')
const CALLERS = 100

const { values: opt } = parseArgs({
  options: {
    node: { type: 'string' },
    rounds: { type: 'string' },
    quick: { type: 'boolean', default: false },
    wall: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    child: { type: 'string' }, // internal: the case a child measures, as JSON
  },
})

// Sizes per child: `reps` interleaved repetitions of (bare, case) × `seq` sequential calls, then
// `reps` runs of `tput` calls through 100 concurrent callers.
const SIZES = opt.quick ? { rounds: 2, warm: 5_000, seq: 20_000, reps: 2, tput: 50_000 } : { rounds: 5, warm: 20_000, seq: 100_000, reps: 3, tput: 200_000 }

if (opt.child) await child(JSON.parse(opt.child))
else await parent()

// ---- child: one case, one process -----------------------------------------------------------
async function child({ kase, lib, wall, sizes }) {
  const now = clock(wall)
  if (kase.subscribed) subscribeToCalls()
  const run = kase.resilix ? resilixRun(loadResilix(lib), RESILIX[kase.resilix], CALL_OPTIONS[kase.resilix]) : await PEERS[kase.peer].make()
  // The bare loop is its own function so that the case's loop sees one callee only.
  const bare = async (n) => {
    for (let i = 0; i < n; i++) await work()
  }
  const timed = async (f) => {
    const t = now()
    await f()
    return (now() - t) / sizes.seq
  }
  await bare(sizes.warm)
  await sequential(run, sizes.warm)
  let bareNs = Infinity
  let caseNs = Infinity
  for (let r = 0; r < sizes.reps; r++) {
    bareNs = Math.min(bareNs, await timed(() => bare(sizes.seq)))
    caseNs = Math.min(caseNs, await timed(() => sequential(run, sizes.seq)))
  }
  let callsPerSec = 0
  let rejected = 0
  for (let r = 0; r < sizes.reps; r++) {
    const t = now()
    rejected += await concurrent(run, sizes.tput, CALLERS)
    callsPerSec = Math.max(callsPerSec, sizes.tput / ((now() - t) / 1e9))
  }
  console.log(JSON.stringify({ bareNs, caseNs, callsPerSec, rejected }))
}

// ---- parent ---------------------------------------------------------------------------------
function runtimes() {
  const found = nodeVersions(root)
  // Also the `node` on PATH, for a parent run by another Node (`node24 compare.mjs --node 20`).
  const onPath = spawnSync('node', ['-p', 'process.execPath + " " + process.version'], { encoding: 'utf8' }).stdout?.trim().split(' ')
  if (onPath?.length === 2 && !found.some((r) => r.version === onPath[1])) found.push({ label: 'PATH', bin: onPath[0], version: onPath[1] })
  const major = (v) => v.replace(/^v/, '').split('.')[0]
  if (!opt.node) return found.filter((r) => r.label === 'system' || r.label === 'node24')
  return opt.node.split(',').map((want) => {
    if (want.includes('/') && existsSync(want)) return { label: want, bin: want, version: spawnSync(want, ['--version'], { encoding: 'utf8' }).stdout.trim() }
    const hit = found.find((r) => major(r.version) === want.replace(/^v/, ''))
    if (!hit) throw new Error(`no Node ${want} here (found ${found.map((r) => r.version).join(', ')}); pass a path instead`)
    return hit
  })
}

function cases(baseline) {
  const rx = (label, resilix) => ({ label, resilix })
  const own = [
    { label: 'cockatiel bulkhead (a counter in JS)', peer: 'cockatielBulkhead' },
    { label: 'cockatiel breaker', peer: 'cockatielBreaker' },
    rx('resilix, `breaker: false`', 'breakerOff'),
    rx('resilix, defaults', 'defaults'),
    rx('resilix, full (timeout + bulkhead + breaker + limiter)', 'full'),
    { label: 'p-limit', peer: 'pLimit' },
    { label: 'opossum', peer: 'opossum' },
    rx('resilix, defaults + `timeoutMs`', 'defaultsTimed'),
    { ...rx('resilix, defaults + a diagnostics_channel subscriber', 'defaultsObserved'), subscribed: true },
    { ...rx('resilix, defaults + `retry: true` (succeeds at once)', 'defaultsRetry'), retry: true },
    { ...rx('resilix, defaults + `timeoutMs` + `retry: true` (succeeds at once)', 'defaultsTimedRetry'), retry: true },
    { ...rx('resilix, defaults + a quota', 'defaultsQuota'), quota: true },
    { ...rx('resilix, defaults, the call naming its key', 'defaultsKeyed'), quota: true },
    { ...rx('resilix, defaults + a quota, each call naming its key and cost', 'defaultsQuotaCost'), quota: true },
  ]
  const base = baseline ? own.filter((c) => c.resilix && !c.subscribed && !c.retry && !c.quota).map((c) => ({ ...c, label: `BASELINE ${c.label}`, lib: baseline })) : []
  return [...own, ...base]
}

function measure(node, kase) {
  const arg = JSON.stringify({ kase, lib: kase.lib, wall: opt.wall, sizes: SIZES })
  const out = spawnSync(node.bin, [self, '--child', arg], { encoding: 'utf8', cwd: root })
  if (out.status !== 0) throw new Error(`${node.version} ${kase.label}: exit ${out.status}\n${out.stderr}`)
  return JSON.parse(out.stdout.trim().split('\n').pop())
}

async function parent() {
  const nodes = runtimes()
  const baseline = opt.baseline ? join(resolve(opt.baseline), 'index.js') : undefined
  const list = cases(baseline)
  const rounds = Number(opt.rounds ?? SIZES.rounds)
  const results = nodes.map(() => list.map(() => []))
  const started = Date.now()
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < list.length; k++) {
      const c = (k + r) % list.length
      for (const [n, node] of nodes.entries()) results[n][c].push(measure(node, list[c]))
    }
    process.stderr.write(`round ${r + 1}/${rounds} done, ${((Date.now() - started) / 1000).toFixed(0)} s\n`)
  }
  const seconds = (Date.now() - started) / 1000

  console.log(`resilix compare: ${opt.wall ? 'wall' : 'CPU'} time, ${rounds} rounds × ${list.length} cases × ${nodes.length} runtimes, one fresh process each (${seconds.toFixed(0)} s)`)
  console.log(`  per child: ${SIZES.reps} interleaved repetitions of ${SIZES.seq} sequential awaited calls, case and bare, min; then ${SIZES.reps} × ${SIZES.tput} calls through ${CALLERS} concurrent callers, max`)
  console.log(`  overhead = case ns/call − the same child's bare ns/call; min across rounds (max in brackets); calls/s: max across rounds`)
  console.log(`  command: ${process.argv0} ${[relative(process.cwd(), self), ...process.argv.slice(2)].join(' ')}`)
  for (const [n, node] of nodes.entries()) report(node, list, results[n])
}

function report(node, list, results) {
  const rows = list.map((c, i) => {
    const over = results[i].map((x) => x.caseNs - x.bareNs)
    return {
      c,
      overhead: Math.min(...over),
      worst: Math.max(...over),
      callsPerSec: Math.max(...results[i].map((x) => x.callsPerSec)),
      rejected: results[i].reduce((s, x) => s + x.rejected, 0),
    }
  })
  const bare = Math.min(...results.flat().map((x) => x.bareNs))
  console.log(`\nNode ${node.version} (${node.bin}); bare await ${bare.toFixed(0)} ns/call\n`)
  const table = [['case', 'overhead ns', 'calls/s @100', 'rejected']]
  for (const r of rows) table.push([r.c.label, `${r.overhead.toFixed(0)} (${r.worst.toFixed(0)})`, `${(r.callsPerSec / 1e6).toFixed(2)} M`, String(r.rejected)])
  printTable(table)

  const find = (prefix) => (key) => rows.find((r) => r.c.label.startsWith(prefix) && (r.c.resilix === key || r.c.peer === key))
  const peer = find('')
  const goals = (label, rx) => {
    const line = (text, ratio, goal, met) => console.log(`  ${text}: ${ratio} (goal ${goal}) ${met ? 'met' : 'NOT met'}`)
    const ratio = (a, b) => a.overhead / b.overhead
    console.log(`\ngoals, ${label}:`)
    const bo = ratio(rx('breakerOff'), peer('cockatielBulkhead'))
    line('`breaker: false` / cockatiel bulkhead', `${bo.toFixed(2)}×`, '≤ 2×', bo <= 2)
    const fo = ratio(rx('full'), peer('opossum'))
    line('full / opossum', `${fo.toFixed(2)}×`, '≤ 0.25×', fo <= 0.25)
    const fb = ratio(rx('full'), peer('cockatielBreaker'))
    line('full / cockatiel breaker', `${fb.toFixed(2)}×`, '< 1×', fb < 1)
    const tu = ratio(rx('defaultsTimed'), rx('defaults'))
    line('defaults with `timeoutMs` / without (overhead)', `${tu.toFixed(2)}×`, '≤ 1.3×', tu <= 1.3)
    if (rx('defaultsObserved')) {
      const ob = ratio(rx('defaultsObserved'), rx('defaults'))
      console.log(`  defaults with a diagnostics_channel subscriber / without (overhead): ${ob.toFixed(2)}× (what publishing every call costs)`)
    }
    if (rx('defaultsRetry')) {
      const re = ratio(rx('defaultsRetry'), rx('defaults'))
      line('defaults with `retry: true`, succeeding at once / without (overhead)', `${re.toFixed(2)}×`, '≤ 1.1×', re <= 1.1)
      const rt = ratio(rx('defaultsTimedRetry'), rx('defaultsTimed'))
      line('defaults + `timeoutMs` with `retry: true` / without (overhead)', `${rt.toFixed(2)}×`, '≤ 1.1×', rt <= 1.1)
    }
    if (rx('defaultsQuota')) {
      const q = rx('defaultsQuota').overhead - rx('defaults').overhead
      line('defaults with a quota / without (added ns per call)', `${q.toFixed(0)} ns`, '≤ 100 ns', q <= 100)
      const qc = rx('defaultsQuotaCost').overhead - rx('defaultsKeyed').overhead
      line('`{ key, cost }` with a quota / `{ key }` without (added ns per call)', `${qc.toFixed(0)} ns`, '≤ 100 ns', qc <= 100)
    }
    const m = (r) => `${(r.callsPerSec / 1e6).toFixed(2)} M`
    for (const key of ['full', 'defaults', 'breakerOff']) {
      line(`calls/s @100, ${rx(key).c.label}`, m(rx(key)), '≥ 5 M', rx(key).callsPerSec >= 5e6)
    }
    console.log(`  (for scale: cockatiel bulkhead ${m(peer('cockatielBulkhead'))} calls/s @100)`)
  }
  goals('this checkout', find('resilix'))
  if (list.some((c) => c.lib)) {
    goals('BASELINE', find('BASELINE'))
    // Nobody subscribes in either: the per-call events' whole cost is the channel check.
    const quiet = find('resilix')('defaults').overhead / find('BASELINE')('defaults').overhead
    console.log(`\n  defaults, this checkout / BASELINE (nobody subscribed to diagnostics_channel): ${quiet.toFixed(2)}× (goal ≤ 1.15×, the noise between runs) ${quiet <= 1.15 ? 'met' : 'NOT met'}`)
  }
}

function printTable(rows) {
  const widths = rows[0].map((_, j) => Math.max(...rows.map((r) => r[j].length)))
  for (const [k, r] of rows.entries()) {
    console.log('| ' + r.map((v, j) => (j === 0 ? v.padEnd(widths[j]) : v.padStart(widths[j]))).join(' | ') + ' |')
    if (k === 0) console.log('|' + widths.map((w, j) => (j === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
  }
}
