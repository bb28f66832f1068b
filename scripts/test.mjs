// `npm test`: every test. The cargo tests (engine, simulator acceptance), the Node tests under
// Node 20, 22 and 24, and the typings check. Ends with one "N passed, N failed" line.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nodeVersions } from './node-versions.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const only = process.argv.slice(2) // e.g. `npm test -- node` or `npm test -- cargo types`
const want = (step) => only.length === 0 || only.includes(step)
const results = []
const counts = { passed: 0, failed: 0 }
const tmp = mkdtempSync(join(tmpdir(), 'resilix-test-'))

let lastStdout = ''
function run(name, cmd, args, opts = {}) {
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`)
  const t = Date.now()
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', maxBuffer: 256 * 1024 * 1024, encoding: 'utf8', ...opts })
  lastStdout = r.stdout || ''
  if (opts.echo) process.stdout.write(lastStdout)
  const ok = r.status === 0
  console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (exit ${r.status ?? r.signal})`} in ${((Date.now() - t) / 1000).toFixed(1)} s`)
  results.push({ name, ok })
  return ok
}

const node = process.env.npm_node_execpath || process.execPath
run('build', node, [join(root, 'scripts', 'ensure-built.mjs')])

if (want('cargo')) {
  // stdout is captured to count the tests, then echoed; compile progress streams on stderr.
  const ok = run('cargo test', 'cargo', ['test', '--workspace', '--quiet'], { stdio: ['inherit', 'pipe', 'inherit'], echo: true })
  for (const m of lastStdout.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    counts.passed += Number(m[1])
    counts.failed += Number(m[2])
  }
  if (!ok && !/test result/.test(lastStdout)) counts.failed++
}

if (want('node')) {
  const files = readdirSync(join(root, '__test__'))
    .filter((f) => f.endsWith('.test.mjs'))
    .sort()
    .map((f) => join('__test__', f))
  for (const { label, bin, version } of nodeVersions(root)) {
    const tap = join(tmp, `${label}.tap`)
    const ok = run(`node tests (${label} ${version})`, bin, [
      '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files,
    ], { env: { ...process.env, RESILIX_TEST_NODE: version } })
    let text = ''
    try {
      text = readFileSync(tap, 'utf8')
    } catch {}
    const pass = Number(/^# pass (\d+)/m.exec(text)?.[1] ?? 0)
    const fail = Number(/^# fail (\d+)/m.exec(text)?.[1] ?? 0) + Number(/^# cancelled (\d+)/m.exec(text)?.[1] ?? 0)
    counts.passed += pass
    counts.failed += fail || (ok ? 0 : 1)
  }
}

if (want('types')) {
  const ok = run('typings (tsc --noEmit)', node, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join('__test__', 'types', 'tsconfig.json')])
  counts[ok ? 'passed' : 'failed']++
}
rmSync(tmp, { recursive: true, force: true })

const failed = results.filter((r) => !r.ok)
console.log('\nsteps:')
for (const r of results) console.log(`  ${r.ok ? 'ok  ' : 'FAIL'} ${r.name}`)
// The closing line counts tests (cargo tests + Node tests per runtime + the typings check).
console.log(`${counts.passed} passed, ${counts.failed} failed`)
process.exit(failed.length || counts.failed ? 1 : 0)
