// Loading the package a second time in one process (require.cache cleared: hot reloaders,
// test runners with module isolation) gives a working second copy; the first keeps working.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const fixture = fileURLToPath(new URL('./fixtures/reload.cjs', import.meta.url))

function run(...args) {
  const r = spawnSync(process.execPath, [fixture, ...args], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.signal, null, `the process was killed by ${r.signal}: ${r.stderr.slice(0, 600)}`)
  assert.equal(r.status, 0, r.stderr.slice(0, 600))
  return r.stdout.trim()
}

test('reload: a second load after require.cache is cleared works, and both copies keep time', () => {
  assert.equal(run(), 'ok')
})

test('reload: a worker loads twice and exits, then the main thread loads twice', () => {
  assert.equal(run('worker'), 'ok after a worker')
})
