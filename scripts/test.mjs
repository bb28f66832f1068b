// `npm test`: every test. The cargo tests (engine, simulator acceptance), the Node tests under
// Node 20, 22 and 24, and the typings check. Ends with one "N passed, N failed" line.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { nodeVersions } from './node-versions.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const only = process.argv.slice(2) // e.g. `npm test -- node` or `npm test -- cargo types`
const want = (step) => only.length === 0 || only.includes(step)
const results = []

function run(name, cmd, args, opts = {}) {
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`)
  const t = Date.now()
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts })
  const ok = r.status === 0
  console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (exit ${r.status ?? r.signal})`} in ${((Date.now() - t) / 1000).toFixed(1)} s`)
  results.push({ name, ok })
  return ok
}

const node = process.env.npm_node_execpath || process.execPath
run('build', node, [join(root, 'scripts', 'ensure-built.mjs')])

if (want('cargo')) run('cargo test', 'cargo', ['test', '--workspace', '--quiet'])

if (want('node')) {
  const files = readdirSync(join(root, '__test__'))
    .filter((f) => f.endsWith('.test.mjs'))
    .sort()
    .map((f) => join('__test__', f))
  for (const { label, bin, version } of nodeVersions(root)) {
    run(`node tests (${label} ${version})`, bin, ['--test', '--test-reporter=spec', ...files], {
      env: { ...process.env, RESILIX_TEST_NODE: version },
    })
  }
}

if (want('types')) {
  run('typings (tsc --noEmit)', node, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join('__test__', 'types', 'tsconfig.json')])
}

const failed = results.filter((r) => !r.ok)
console.log('\nsteps:')
for (const r of results) console.log(`  ${r.ok ? 'ok  ' : 'FAIL'} ${r.name}`)
console.log(`${results.length - failed.length} passed, ${failed.length} failed`)
process.exit(failed.length ? 1 : 0)
