// The loader wrapper (lib/load-native.js): on a platform with no binary, the error names the detected
// platform/arch/libc and says what to do. Platforms are faked two ways: a child Node whose
// process.platform / process.arch are redefined by a --require preload (the whole real path, napi's
// native.js included), and an injected host for cases a preload cannot fake (libc).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { loadNative, nativeLoadError, detectHost, detectLibc, targetFor, formatHost, SUPPORTED_TARGETS } = require('../lib/load-native.js')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const preload = join(root, '__test__', 'fixtures', 'fake-platform.cjs')
const hostTarget = targetFor(detectHost())
const built = hostTarget && existsSync(join(root, `${pkg.napi.binaryName}.${hostTarget.abi}.node`))

/** Runs `code` in a child Node that believes it runs on `fake`; returns the error it caught as JSON. */
function loadAs(fake, code, env = {}) {
  const r = spawnSync(
    process.execPath,
    ['--require', preload, '-e', `
      try { ${code}; console.log(JSON.stringify({ loaded: true })) }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, host: e.host })) }`],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: '', FAKE_PLATFORM: fake.platform ?? '', FAKE_ARCH: fake.arch ?? '', ...env },
    },
  )
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').pop())
}

const LOAD = `require('./lib/load-native.js').loadNative()`

test('SUPPORTED_TARGETS is exactly package.json napi.targets', () => {
  assert.deepEqual(SUPPORTED_TARGETS.map((t) => t.triple).sort(), [...pkg.napi.targets].sort())
  for (const t of SUPPORTED_TARGETS) assert.equal(t.packageName, `${pkg.name}-${t.abi}`)
})

test('unsupported OS (faked freebsd x64): names the platform, lists what is supported, says how to build', () => {
  const r = loadAs({ platform: 'freebsd', arch: 'x64' }, LOAD)
  assert.equal(r.code, 'ERR_RESILIX_NATIVE_BINDING')
  assert.deepEqual(r.host, { platform: 'freebsd', arch: 'x64', libc: null })
  assert.match(r.message, /no prebuilt native binary for this platform: detected freebsd x64\./)
  assert.match(r.message, /Prebuilt binaries exist for: Linux x64 glibc, Linux arm64 glibc, Linux x64 musl, Linux arm64 musl, macOS x64, macOS arm64, Windows x64\./)
  assert.match(r.message, /Rust toolchain/)
  assert.match(r.message, /npm ci && npm run build/)
  assert.match(r.message, /NAPI_RS_NATIVE_LIBRARY_PATH/)
  // napi's own message blames an npm bug; it must not be what the user reads here.
  assert.doesNotMatch(r.message, /npm has a bug/)
})

test('unsupported arch on a supported OS (faked linux riscv64): says so, with the detected libc', () => {
  const r = loadAs({ platform: 'linux', arch: 'riscv64' }, LOAD)
  assert.equal(r.code, 'ERR_RESILIX_NATIVE_BINDING')
  assert.match(r.message, /detected linux riscv64 \((glibc|musl)\)\./)
  assert.match(r.message, /Prebuilt binaries exist for:/)
})

// Each supported platform other than the real one: napi's loader finds no binary, so the error must
// name that platform's package. (The real host is skipped: its binary may well be installed.)
const real = detectHost()
for (const fake of [
  { platform: 'linux', arch: 'arm64' },
  { platform: 'linux', arch: 'x64' },
  { platform: 'darwin', arch: 'arm64' },
  { platform: 'darwin', arch: 'x64' },
  { platform: 'win32', arch: 'x64' },
]) {
  const same = fake.platform === real.platform && fake.arch === real.arch
  // The preload fakes platform and arch; the C library stays the host's (glibc here, musl on Alpine).
  const expected = targetFor({ ...fake, libc: detectLibc(fake.platform) })
  test(`supported platform without its binary package (faked ${fake.platform} ${fake.arch}): names the package to install`, { skip: same && 'this is the real host' }, () => {
    const r = loadAs(fake, LOAD)
    assert.equal(r.code, 'ERR_RESILIX_NATIVE_BINDING')
    const esc = (s) => s.replace(/[.()]/g, '\\$&')
    assert.match(r.message, new RegExp(`${esc(formatHost(r.host))} is supported, but its binary package ${expected.packageName} is not installed`))
    assert.match(r.message, new RegExp(`npm install ${expected.packageName}@${esc(pkg.version)}`))
    assert.match(r.message, /--omit=optional/)
  })
}

test('require("resilix") itself (index.js) throws the same error on an unsupported platform', () => {
  const r = loadAs({ platform: 'freebsd', arch: 'x64' }, `require('./index.js')`)
  assert.equal(r.code, 'ERR_RESILIX_NATIVE_BINDING')
  assert.match(r.message, /detected freebsd x64/)
})

test('a bad NAPI_RS_NATIVE_LIBRARY_PATH is named, with the loader error', () => {
  const r = loadAs({}, LOAD, { NAPI_RS_NATIVE_LIBRARY_PATH: '/nonexistent/resilix.node' })
  assert.equal(r.code, 'ERR_RESILIX_NATIVE_BINDING')
  assert.match(r.message, /NAPI_RS_NATIVE_LIBRARY_PATH=\/nonexistent\/resilix\.node/)
  assert.match(r.message, /Cannot find module '\/nonexistent\/resilix\.node'/)
})

test('musl is reported as musl (injected host: a preload cannot fake the C library)', () => {
  const cause = new Error('Cannot find native binding')
  assert.throws(
    () => loadNative({ host: { platform: 'linux', arch: 'x64', libc: 'musl' }, requireNative: () => { throw cause } }),
    (e) => e.code === 'ERR_RESILIX_NATIVE_BINDING' && e.cause === cause && /\(musl\)/.test(e.message),
  )
  const e = nativeLoadError({ platform: 'linux', arch: 'x64', libc: 'musl' }, cause, { env: {}, resolveFrom: () => { throw new Error('not found') } })
  assert.match(e.message, /linux x64 \(musl\) is supported, but its binary package resilix-linux-x64-musl is not installed/)
  const arm32 = nativeLoadError({ platform: 'linux', arch: 'arm', libc: 'musl' }, cause, { env: {} })
  assert.match(arm32.message, /no prebuilt native binary for this platform: detected linux arm \(musl\)/)
})

test('installed but failing to load: says which version is installed and shows the loader errors', () => {
  const inner = new Error("Cannot find module './resilix.linux-x64-gnu.node'")
  const outer = new Error('Cannot find native binding. npm has a bug related to optional dependencies', { cause: new Error('GLIBC_2.39 not found', { cause: inner }) })
  const host = { platform: 'linux', arch: 'x64', libc: 'glibc' }
  const stale = nativeLoadError(host, outer, { env: {}, resolveFrom: () => ({ version: '0.0.1' }) })
  assert.match(stale.message, /resilix-linux-x64-gnu@0\.0\.1 is installed, but it failed to load/)
  assert.match(stale.message, /Its version differs from resilix@/)
  assert.match(stale.message, /GLIBC_2\.39 not found/)
  assert.doesNotMatch(stale.message, /npm has a bug/)
  const same = nativeLoadError(host, outer, { env: {}, resolveFrom: () => ({ version: pkg.version }) })
  assert.match(same.message, /report it with the cause below/)
})

test('on this host the binding loads, once', { skip: !built && 'addon not built (npm run build)' }, () => {
  const a = loadNative()
  assert.equal(typeof a.createEngine, 'function')
  assert.equal(loadNative(), a)
})
