// `npm test` runs the compatibility suite (__test__/compat/) under Node, Bun and Deno
// (scripts/runtimes.mjs). A runtime that is missing, does not run, crashes or loses checks fails
// the run with a message naming it: never a silent skip. Stand-in runtimes are set with
// RESILIX_BUN / RESILIX_DENO, so these tests need neither real binary.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { DENO_PERMISSIONS, runtimes } from '../scripts/runtimes.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = mkdtempSync(join(tmpdir(), 'resilix-runtimes-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** `node scripts/test.mjs <args>` with `env` added: its status and output. */
function npmTest(args, env) {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'test.mjs'), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  })
  const lines = r.stdout.trim().split('\n')
  return { status: r.status, out: r.stdout, last: lines.at(-1) }
}

/** A stand-in runtime: a shell script answering --version, then printing `body` (sh). */
function standIn(name, body) {
  const path = join(dir, name)
  writeFileSync(path, `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "${name} 9.9.9"; exit 0; fi\n${body}\n`)
  chmodSync(path, 0o755)
  return path
}
const posixOnly = process.platform === 'win32' && 'a shell script stands in for the runtime'

test('Bun and Deno are required runtimes: a missing binary is an error naming it, not an absence', () => {
  const missing = join(dir, 'nowhere')
  const list = runtimes(root, { RESILIX_BUN: join(missing, 'bun'), RESILIX_DENO: join(missing, 'deno') })
  const byLabel = Object.fromEntries(list.map((r) => [r.label, r]))
  assert.match(byLabel.bun?.error ?? '', /^bun: no binary at .*nowhere.bun \(set by RESILIX_BUN\)$/)
  assert.match(byLabel.deno?.error ?? '', /^deno: no binary at .*nowhere.deno \(set by RESILIX_DENO\)$/)
})

test('npm test fails, naming Bun, when its binary is missing', { timeout: 120_000 }, () => {
  const r = npmTest(['bun'], { RESILIX_BUN: join(dir, 'nowhere', 'bun') })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /=== compat \(bun\): FAILED: bun: no binary at .*nowhere.bun/)
  assert.match(r.out, /FAIL compat \(bun\)/)
  assert.equal(r.last, '0 passed, 1 failed')
})

test('npm test fails, naming Deno, when its binary cannot be executed', { timeout: 120_000 }, () => {
  const notExecutable = join(dir, 'deno-not-executable')
  writeFileSync(notExecutable, 'not a program')
  chmodSync(notExecutable, 0o644)
  const r = npmTest(['deno'], { RESILIX_DENO: notExecutable })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /=== compat \(deno\): FAILED: deno: .*deno-not-executable does not run: \S+/)
  assert.equal(r.last, '0 passed, 1 failed')
})

test('npm test fails, naming the runtime, when it crashes in the middle of the suite', { timeout: 120_000, skip: posixOnly }, () => {
  const crashing = standIn('bun', 'echo "1..3"; echo "ok 1 - first"; kill -SEGV $$')
  const r = npmTest(['bun'], { RESILIX_BUN: crashing })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /compat \(bun 9\.9\.9\): bun ended without the suite's summary \(crashed or killed\)/)
  assert.match(r.out, /=== compat \(bun 9\.9\.9\): FAILED \(exit SIGSEGV\)/)
  assert.equal(r.last, '0 passed, 1 failed')
})

test('npm test counts checks planned but never reported, and a failing exit after a clean report, as failures', { timeout: 120_000, skip: posixOnly }, () => {
  const lossy = standIn('deno', 'echo "1..3"; echo "ok 1 - a"; echo "ok 2 - b"; echo "# pass 2"; echo "# fail 0"')
  let r = npmTest(['deno'], { RESILIX_DENO: lossy })
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /compat deno: 1 of 3 checks never reported/)
  assert.match(r.out, /compat \(deno 9\.9\.9\): 2 passed, 1 failed \(1 never reported\)/)
  assert.equal(r.last, '2 passed, 1 failed')

  const lingering = standIn('bun', 'echo "1..1"; echo "ok 1 - a"; echo "# pass 1"; echo "# fail 0"; echo "# the process was still alive"; exit 1')
  r = npmTest(['bun'], { RESILIX_BUN: lingering })
  assert.equal(r.status, 1, r.out)
  assert.equal(r.last, '1 passed, 1 failed')
})

test('npm test refuses an unknown step or runtime instead of running nothing', { timeout: 120_000 }, () => {
  const r = npmTest(['nodes'], {})
  assert.equal(r.status, 1, r.out)
  assert.match(r.out, /unknown step or runtime "nodes" \(steps: lint, cargo, node, fleet, slots, runtimes, types; runtimes: system, .*bun, deno\)/)
  assert.equal(r.last, '0 passed, 1 failed')
})

// npm 11 blocks dependencies' install scripts unless approved, and --ignore-scripts skips them:
// the `bun` package's binary arrives only through its postinstall. The runtimes are aliases of
// the platform packages, which carry the binaries themselves.
test('the dev set-up runs no install script: Bun and Deno are their platform packages, whatever npm allows', () => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const withScripts = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript).map(([path]) => path)
  assert.deepEqual(withScripts, [])
  assert.equal(lock.packages['node_modules/bun']?.name, '@oven/bun-linux-x64')
  assert.equal(lock.packages['node_modules/deno']?.name, '@deno/linux-x64-glibc')
})

test('the README names the Bun and Deno versions the suite runs (package-lock.json) and the Deno permissions it runs with', () => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  for (const [name, runtime] of [['bun', 'Bun'], ['deno', 'Deno']]) {
    const version = lock.packages[`node_modules/${name}`]?.version
    assert.ok(version, `${name} in package-lock.json`)
    assert.ok(readme.includes(`| ${runtime} ${version} |`), `README's runtimes table names ${runtime} ${version}`)
  }
  // The permissions the README gives Deno users are the ones the suite runs with.
  assert.ok(readme.includes(`\`deno run ${DENO_PERMISSIONS.join(' ')}\``), 'README gives the suite\'s Deno permissions')
})

// Bun and Deno break on threadsafe functions and async Rust in Node-API addons (see
// docs/design.md): the binding must not start using them unnoticed.
test('the binding makes only synchronous Node-API calls: no threadsafe function, async task or thread', () => {
  const src = join(root, 'src', 'binding')
  const hits = []
  for (const f of readdirSync(src).filter((f) => f.endsWith('.rs'))) {
    readFileSync(join(src, f), 'utf8').split('\n').forEach((line, i) => {
      if (/ThreadsafeFunction|threadsafe_function|AsyncTask|\bimpl\s+Task\b|\basync\s+fn\b|tokio|thread::spawn|napi_create_async_work|spawn_future/.test(line)) hits.push(`${f}:${i + 1}: ${line.trim()}`)
    })
  }
  assert.deepEqual(hits, [])
  const cargo = readFileSync(join(root, 'Cargo.toml'), 'utf8')
  const napi = /^napi = \{[^}]*features = \[([^\]]*)\]/m.exec(cargo)
  assert.ok(napi, 'Cargo.toml lists the napi features')
  const features = napi[1].split(',').map((s) => s.trim().replace(/"/g, '')).filter(Boolean)
  assert.deepEqual(features.filter((f) => !/^napi[1-4]$|^dyn-symbols$/.test(f)), [], 'no async or tokio feature of napi')
})
