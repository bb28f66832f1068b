// `npm test`: every test. Lint (clippy and ESLint), the cargo tests (engine, simulator
// acceptance), the Node tests under Node 20, 22 and 24, a fleet of processes on a real upstream (once),
// an LLM server's generation slots on a real upstream (once), the runtime-compatibility
// suite under those, Bun and Deno, and the typings check. Ends with one "N passed, N failed" line.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nodeVersions } from './node-versions.mjs'
import { COMPAT_SUITE, runtimes } from './runtimes.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// e.g. `npm test -- node`, `npm test -- lint cargo types`; a runtime's label (`bun`, `deno`,
// `node22`) runs the compatibility suite under that runtime only.
const only = process.argv.slice(2)
const STEPS = ['lint', 'cargo', 'node', 'fleet', 'slots', 'runtimes', 'types']
const want = (step) => only.length === 0 || only.includes(step)
const results = []
const counts = { passed: 0, failed: 0 }
// Failing tests by name, repeated at the very end: a CI log shown only in part keeps its tail.
const failures = []
const tmp = mkdtempSync(join(tmpdir(), 'resilix-test-'))

// Every step has a wall-clock budget. A step over it is killed with its whole process group and
// counted as failed, so that one hung test can never hold the run past CI's limit (a CI run once
// timed out on a test process kept alive after a failed assertion).
const MINUTE = 60_000
// Budgets sum to 4 + 3 + 5 + 3 + 3 × 16 + 11 + 3 + 5 × 2 + 2 = 89 min, inside CI's 90 with npm ci;
// a clean run takes ~59 on 2 cores (the build 0.5, lint from a cold target/ 56 s of CPU, cargo
// 2, each Node runtime about 13.8, of which 2.5 are the streaming tests, 1 the quota's real
// upstream, 2.5 the fleet sharing a quota through Redis and 0.5 twenty fresh processes' first
// batch; the fleet of processes 9; the generation slots 1.1; tsc 9 s of CPU, 38 s at a load of
// 16) (ADR 1215, ADR 1221).
let lastStdout = ''

// The innermost failing tests of a TAP report, each with the first lines of its error. A file
// or suite that fails only because a test inside it failed is not repeated.
function tapFailures(text) {
  const lines = text.split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*?)(\s+#.*)?$/.exec(lines[i])
    if (!m || /#\s*TODO/i.test(m[3] ?? '')) continue
    let error = ''
    let failureType = ''
    for (let j = i + 1; j < lines.length && !/^\s*(not )?ok \d+/.test(lines[j]); j++) {
      const t = lines[j].trim()
      if (t.startsWith('failureType:')) failureType = t.slice(12).trim().replace(/'/g, '')
      if (t.startsWith('error:')) {
        error = t.slice(6).trim().replace(/^['|>-]+$/, '')
        // A block scalar: its first three non-empty lines ("Expected values to be strictly
        // equal:" alone names nothing).
        const indent = lines[j].search(/\S/)
        for (let k = j + 1, n = 0; !error.includes('\n') && n < 3 && k < lines.length; k++) {
          if (lines[k].trim() && lines[k].search(/\S/) <= indent) break
          if (lines[k].trim()) error += `${n++ ? ' ' : ''}${lines[k].trim()}`
        }
        break
      }
    }
    if (failureType === 'subtestsFailed') continue
    out.push(`${m[2]}${error ? ` — ${error.slice(0, 400)}` : ''}`)
  }
  return out
}
async function run(name, cmd, args, { budgetMs = 20 * MINUTE, capture = false, env } = {}) {
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`)
  const t = Date.now()
  const child = spawn(cmd, args, {
    cwd: root,
    env: env ?? process.env,
    stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    detached: true, // its own process group, so the watchdog reaches the grandchildren too
  })
  let out = ''
  if (capture) {
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d) => {
      out += d
      process.stdout.write(d)
    })
  }
  let timedOut = false
  const watchdog = setTimeout(() => {
    timedOut = true
    console.log(`\n=== ${name}: over its budget of ${budgetMs / MINUTE} min, killing it`)
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {}
  }, budgetMs)
  const status = await new Promise((resolve) => {
    child.on('error', (e) => {
      console.log(`=== ${name}: could not start: ${e.message}`)
      resolve(-1)
    })
    child.on('close', (code, signal) => resolve(code ?? signal))
  })
  clearTimeout(watchdog)
  lastStdout = out
  const ok = status === 0 && !timedOut
  const why = timedOut ? `killed after ${budgetMs / MINUTE} min` : `exit ${status}`
  console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (${why})`} in ${((Date.now() - t) / 1000).toFixed(1)} s`)
  results.push({ name, ok })
  return ok
}

const node = process.env.npm_node_execpath || process.execPath
await run('build', node, [join(root, 'scripts', 'ensure-built.mjs')], { budgetMs: 4 * MINUTE })

// First: it is fast, and names a mistake before the long steps run (ADR 1215).
if (want('lint')) {
  const ok = await run('lint (clippy, eslint)', node, [join(root, 'scripts', 'lint.mjs')], { budgetMs: 3 * MINUTE })
  counts[ok ? 'passed' : 'failed']++
  if (!ok) failures.push('lint: clippy or eslint found problems (npm run lint)')
}

if (want('cargo')) {
  // stdout is captured to count the tests, then echoed; compile progress streams on stderr.
  const ok = await run('cargo test', 'cargo', ['test', '--workspace', '--quiet'], { capture: true, budgetMs: 5 * MINUTE })
  for (const m of lastStdout.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    counts.passed += Number(m[1])
    counts.failed += Number(m[2])
  }
  if (!ok && !/test result/.test(lastStdout)) counts.failed++
  // `--quiet` prints no per-test lines; a failure's captured output opens with its name.
  // Its first two lines after blank ones: where it panicked, then the message.
  for (const m of lastStdout.matchAll(/^---- (\S+) stdout ----\n+([^\n]*\n?[^\n]*)/gm)) {
    failures.push(`cargo: ${m[1]}: ${m[2].replace(/\s+/g, ' ').slice(0, 300)}`)
  }
}

if (want('node')) {
  // The fleet tests' real Redis: installed here when missing (as root), so that this command
  // alone sets everything up.
  await run('redis-server', node, [join(root, 'scripts', 'ensure-redis.mjs')], { budgetMs: 3 * MINUTE })
  results.pop() // a missing redis-server fails the tests that need it, by name
  const files = readdirSync(join(root, '__test__'))
    .filter((f) => f.endsWith('.test.mjs'))
    .sort()
    .map((f) => join('__test__', f))
  const ran = []
  for (const { label, bin, version } of nodeVersions(root)) {
    const tap = join(tmp, `${label}.tap`)
    // --test-timeout: a single hung test fails (cancelled) instead of blocking its file.
    // Not --test-force-exit: on Node 20.20 it cut the TAP summary, and on 22.23 under load it
    // once dropped the last five results of a file (200 tests reported instead of 205). A
    // leaked handle is the watchdog's to catch, and the helpers' keepAlive() ends with its test.
    const ok = await run(`node tests (${label} ${version})`, bin, [
      '--test', '--test-timeout=180000',
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files,
    ], { env: { ...process.env, RESILIX_TEST_NODE: version }, budgetMs: 16 * MINUTE })
    let text = ''
    try {
      text = readFileSync(tap, 'utf8')
    } catch {}
    if (!/^# pass \d+/m.test(text)) {
      // No summary means the counts below would silently drop a runtime's tests: a failure.
      console.log(`=== node tests (${label}): no TAP summary in ${tap}`)
      counts.failed++
      results.push({ name: `node tests (${label}) report`, ok: false })
      continue
    }
    const pass = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0)
    const fail = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0) + Number(/^# cancelled (\d+)/m.exec(text)?.[1] ?? 0)
    counts.passed += pass
    counts.failed += fail || (ok ? 0 : 1)
    for (const f of tapFailures(text)) failures.push(`${label}: ${f}`)
    ran.push({ label, tests: Number(/^# tests (\d+)/m.exec(text)?.[1] ?? 0) })
  }
  // Every runtime runs the same files, so the same number of tests: fewer means results were
  // lost (a file cut short), which the pass/fail counts alone would not show.
  const most = Math.max(0, ...ran.map((r) => r.tests))
  for (const r of ran) {
    if (r.tests < most) {
      console.log(`=== node tests (${r.label}): ${r.tests} tests reported, ${most} on another runtime`)
      counts.failed++
      results.push({ name: `node tests (${r.label}) complete`, ok: false })
    }
  }
}

/** A test file run once, under this Node, as its own step with its own budget. */
async function runOnce(step, label, file, budgetMs) {
  const tap = join(tmp, `${step}.tap`)
  const ok = await run(label, node, [
    '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, file,
  ], { budgetMs })
  let text = ''
  try {
    text = readFileSync(tap, 'utf8')
  } catch {}
  const pass = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0)
  const fail = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0) + Number(/^# cancelled (\d+)/m.exec(text)?.[1] ?? 0)
  counts.passed += pass
  counts.failed += fail || (ok && pass > 0 ? 0 : 1)
  for (const f of tapFailures(text)) failures.push(`${step}: ${f}`)
}

// Processes sharing one real upstream (`__test__/fleet/`): run once, under this Node. They
// measure the limit, which the runtime does not change, for 9 minutes.
if (want('fleet')) {
  await runOnce('fleet', 'fleet of processes', join('__test__', 'fleet', 'fair-share.test.mjs'), 11 * MINUTE)
}

// A self-hosted LLM server's generation slots on a real upstream (`__test__/slots/`): run once,
// under this Node, for the same reason; its ten 60 s runs go at once (ADR 1221).
if (want('slots')) {
  await runOnce('slots', 'generation slots', join('__test__', 'slots', 'llm-slots.test.mjs'), 3 * MINUTE)
}

// The compatibility suite under each runtime. A runtime that cannot run, crashes, or reports
// fewer checks than it planned is a failure that names it (ADR 0805).
const compat = []
const runtimeLabels = only.filter((a) => !STEPS.includes(a))
if (want('runtimes') || runtimeLabels.length) {
  const all = runtimes(root)
  for (const label of runtimeLabels) {
    if (!all.some((r) => r.label === label)) {
      console.log(`\n=== unknown step or runtime "${label}" (steps: ${STEPS.join(', ')}; runtimes: ${all.map((r) => r.label).join(', ')})`)
      counts.failed++
      results.push({ name: `"${label}"`, ok: false })
    }
  }
  for (const rt of all.filter((r) => want('runtimes') || runtimeLabels.includes(r.label))) {
    const name = `compat (${rt.label}${rt.version ? ` ${rt.version}` : ''})`
    if (rt.error) {
      console.log(`\n=== ${name}: FAILED: ${rt.error}`)
      counts.failed++
      results.push({ name, ok: false })
      failures.push(`compat: ${rt.error}`)
      compat.push({ name, line: `FAILED: ${rt.error}` })
      continue
    }
    const ok = await run(name, rt.bin, rt.args(COMPAT_SUITE), { capture: true, env: { ...process.env, ...rt.env }, budgetMs: 2 * MINUTE })
    const plan = /^1\.\.(\d+)$/m.exec(lastStdout)
    const pass = /^# pass (\d+)$/m.exec(lastStdout)
    const fail = /^# fail (\d+)$/m.exec(lastStdout)
    if (!plan || !pass || !fail) {
      const why = `${rt.label} ended without the suite's summary (crashed or killed)`
      console.log(`=== ${name}: ${why}`)
      counts.failed++
      failures.push(`compat: ${why}`)
      compat.push({ name, line: `FAILED: ${why}` })
      continue
    }
    const [planned, passed, failed] = [plan, pass, fail].map((m) => Number(m[1]))
    // Checks planned but never reported, or a clean report from a process that failed (for
    // one that stayed alive after its last check), count as failures too.
    const lost = Math.max(0, planned - passed - failed)
    const extra = lost + (!ok && failed === 0 && lost === 0 ? 1 : 0)
    counts.passed += passed
    counts.failed += failed + extra
    for (const f of tapFailures(lastStdout)) failures.push(`compat ${rt.label}: ${f}`)
    if (lost) failures.push(`compat ${rt.label}: ${lost} of ${planned} checks never reported`)
    compat.push({ name, line: `${passed} passed, ${failed + extra} failed${lost ? ` (${lost} never reported)` : ''}` })
  }
}

if (want('types')) {
  const ok = await run('typings (tsc --noEmit)', node, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join('__test__', 'types', 'tsconfig.json')], { budgetMs: 2 * MINUTE })
  counts[ok ? 'passed' : 'failed']++
}
rmSync(tmp, { recursive: true, force: true })

const failed = results.filter((r) => !r.ok)
if (failures.length) {
  console.log('\nfailed tests:')
  for (const f of failures) console.log(`  ${f}`)
}
if (compat.length) {
  console.log('\ncompatibility suite, per runtime:')
  for (const c of compat) console.log(`  ${c.name}: ${c.line}`)
}
console.log('\nsteps:')
for (const r of results) console.log(`  ${r.ok ? 'ok  ' : 'FAIL'} ${r.name}`)
// The closing line counts tests (the lint step + cargo tests + Node tests per Node + the
// compatibility checks per runtime + the typings check).
console.log(`${counts.passed} passed, ${counts.failed} failed`)
process.exit(failed.length || counts.failed ? 1 : 0)
