// Installs what `npm run pack:local` writes into an empty project, offline, the way a user's
// `npm install resilix` lands (main package + this platform's binary package), then uses it from
// CommonJS and ESM, and type-checks strict TypeScript against the installed typings under each
// consumer set-up (fixtures/consumer-typings.mjs). The binary packed is the release build, never
// the test build in the repository root (ADR 0402).
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { checkSetups, consumerSetups } from './fixtures/consumer-typings.mjs'
import { exportsOf, TEST_HOOK_EXPORTS, testHooksIn } from '../scripts/release-binary.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { detectHost, targetFor, SUPPORTED_TARGETS } = require('../lib/load-native.js')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

const target = targetFor(detectHost())
const binaryFile = target && `${pkg.napi.binaryName}.${target.abi}.node`
const skip = !target
  ? 'no prebuilt target for this host'
  : !existsSync(join(root, binaryFile))
    ? `${binaryFile} not built (run \`npm run build\`)`
    : false
// The release workflow tests its release artifact, in containers without a Rust toolchain: the
// root binary then has no hooks, and pack:local packs it as it is (--binary).
const releaseArtifact = !skip && testHooksIn(join(root, binaryFile)).length === 0

// The npm that runs `npm test` (npm_execpath), else npm on PATH.
function npm(args, cwd, withStderr = false) {
  const viaNode = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')
  const r = spawnSync(viaNode ? process.execPath : 'npm', viaNode ? [process.env.npm_execpath, ...args] : args, {
    cwd,
    encoding: 'utf8',
    shell: !viaNode && process.platform === 'win32',
  })
  assert.equal(r.status, 0, `npm ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`)
  return withStderr ? r.stdout + r.stderr : r.stdout
}

const CJS = `
const assert = require('node:assert/strict')
const resilix = require('resilix')
const { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError } = resilix
for (const [name, v] of Object.entries({ Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError })) {
  assert.equal(typeof v, 'function', name)
}
assert.equal(isRejectedError(new Error('x')), false)
assert.equal(isTimeoutError(new Error('x')), false)
new Resilix().execute(async (ctx) => 1, { key: 'k' }).then((v) => {
  assert.equal(v, 1)
  const binaries = Object.keys(require.cache).filter((p) => p.endsWith('.node'))
  console.log(JSON.stringify({ v, binaries }))
})
`

const ESM = `
import assert from 'node:assert/strict'
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError } from 'resilix'
import { createRequire } from 'node:module'
for (const [name, v] of Object.entries({ Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError })) {
  assert.equal(typeof v, 'function', name)
}
// One instance for both module systems: no dual-package hazard.
assert.equal(Resilix, createRequire(import.meta.url)('resilix').Resilix)
const v = await new Resilix().execute(async (ctx) => 1, { key: 'k' })
assert.equal(v, 1)
console.log(JSON.stringify({ v }))
`

// The interceptor from the installed package: ESM and CommonJS are one module; fetch through it.
const INTERCEPTOR = `
import http from 'node:http'
import { createRequire } from 'node:module'
import { Agent } from 'undici'
import { Resilix } from 'resilix'
import { interceptor } from 'resilix/undici'
const server = http.createServer((req, res) => res.end('ok'))
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const origin = 'http://127.0.0.1:' + server.address().port
const rx = new Resilix()
const agent = new Agent().compose(interceptor(rx))
const res = await fetch(origin + '/', { dispatcher: agent })
const body = await res.text()
const s = rx.stats(origin)
console.log(JSON.stringify({ status: res.status, body, inflight: s.inflight, success: s.verdicts.success,
  cjsSame: createRequire(import.meta.url)('resilix/undici').interceptor === interceptor }))
await agent.close()
server.close()
`

// resilix/prometheus and resilix/otel before their peers are installed: resilix itself never
// loads them, and a helper says what to install.
const NO_PEERS = `
const { Resilix } = require('resilix')
const rx = new Resilix()
const loaded = () => Object.keys(require.cache).filter((p) => /prom-client|@opentelemetry/.test(p)).length
const before = loaded()
const codes = {}
for (const m of ['resilix/prometheus', 'resilix/otel']) {
  try { require(m).instrument(rx) } catch (e) { codes[m] = [e.code, e.message] }
}
console.log(JSON.stringify({ before, codes }))
`

// The helpers with their peers (ESM and CommonJS), prom-client's text and the OTel SDK's export.
const METRICS = `
import { createRequire } from 'node:module'
import client from 'prom-client'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { Resilix } from 'resilix'
import { instrument as prometheus } from 'resilix/prometheus'
import { instrument as otel } from 'resilix/otel'
class Reader extends MetricReader { onForceFlush() {} onShutdown() {} }
const reader = new Reader()
const provider = new MeterProvider({ readers: [reader] })
const rx = new Resilix()
const registry = new client.Registry()
prometheus(rx, { registry })
otel(rx, { meter: provider.getMeter('check') })
await rx.execute(async () => ({ status: 404 }), { key: 'api' })
const text = await registry.metrics()
const { resourceMetrics } = await reader.collect()
const names = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name))
const require = createRequire(import.meta.url)
console.log(JSON.stringify({
  answered: text.includes('resilix_call_duration_seconds_count{key="api",verdict="answered"} 1'),
  otel: names.includes('resilix.call.duration'),
  cjsSame: require('resilix/prometheus').instrument === prometheus && require('resilix/otel').instrument === otel,
}))
`


// The helpers' typings with their peers' (strict); the @ts-expect-error lines fail if they degrade to any.
const METRICS_MTS = `
import { Resilix } from 'resilix'
import { instrument as prometheus } from 'resilix/prometheus'
import { instrument as otel } from 'resilix/otel'
import { metrics } from '@opentelemetry/api'
import { Registry } from 'prom-client'
const r = new Resilix()
prometheus(r, { registry: new Registry() }).dispose()
otel(r, { meter: metrics.getMeter('check') }).dispose()
// @ts-expect-error the registry is prom-client's Registry
prometheus(r, { registry: 'default' })
// @ts-expect-error a meter, not a name
otel(r, { meter: 'resilix' })
`

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex')

// The empty project with the two tarballs installed, shared by the tests below.
let dir
let testBuildBefore
before(() => {
  if (skip) return
  testBuildBefore = sha256(join(root, binaryFile))
  // pack:local builds the release addon first (seconds once built, about 30 s from nothing on an idle machine).
  const args = releaseArtifact ? ['--binary', join(root, binaryFile)] : []
  const out = execFileSync(process.execPath, [join(root, 'scripts/pack-local.mjs'), ...args], { cwd: root, encoding: 'utf8' })
  const tarballs = out.trim().split('\n')
  assert.equal(tarballs.length, 2)
  for (const t of tarballs) assert.ok(existsSync(t), t)

  dir = mkdtempSync(join(tmpdir(), 'resilix-pack-'))
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pack-install-check', private: true }))
  // --offline: the two tarballs are all it needs. The other platforms' optional packages are not in
  // the cache and are skipped, as npm skips them on a real install for not matching os/cpu/libc.
  // No --ignore-scripts: npm must find no install script to run or to list for approval.
  const installed = npm(['install', '--offline', '--no-audit', '--no-fund', '--loglevel', 'warn', ...tarballs], dir, true)
  assert.doesNotMatch(installed, /install-scripts|install script|prepare|postinstall/i, installed)
  // resilix/undici with the user's own undici (an optional peer: borrowed from this repository).
  cpSync(join(root, 'node_modules/undici'), join(dir, 'node_modules/undici'), { recursive: true })
}, { timeout: 600_000 })
after(() => dir && rmSync(dir, { recursive: true, force: true }))

test('pack:local tarballs install offline into an empty project and work from CJS and ESM', { skip, timeout: 120_000 }, () => {
  const installed = JSON.parse(readFileSync(join(dir, 'node_modules/resilix/package.json'), 'utf8'))
  assert.equal(installed.version, pkg.version)
  assert.deepEqual(
    installed.optionalDependencies,
    Object.fromEntries(SUPPORTED_TARGETS.map((t) => [t.packageName, pkg.version])),
    'every platform package, at the package version',
  )
  assert.ok(existsSync(join(dir, 'node_modules', target.packageName, binaryFile)))

  writeFileSync(join(dir, 'interceptor.mjs'), INTERCEPTOR)
  const viaInterceptor = JSON.parse(execFileSync(process.execPath, ['interceptor.mjs'], { cwd: dir, encoding: 'utf8' }))
  assert.deepEqual(viaInterceptor, { status: 200, body: 'ok', inflight: 0, success: 1, cjsSame: true })

  writeFileSync(join(dir, 'check.cjs'), CJS)
  writeFileSync(join(dir, 'check.mjs'), ESM)
  // Under the Node running this file (npm test runs the file under 20, 22 and 24).
  const cjs = JSON.parse(execFileSync(process.execPath, ['check.cjs'], { cwd: dir, encoding: 'utf8' }))
  assert.equal(cjs.v, 1)
  // The binary came from the platform package, not from a stray local build.
  assert.deepEqual(
    cjs.binaries.map((p) => p.replace(/\\/g, '/')),
    [join(dir, 'node_modules', target.packageName, binaryFile).replace(/\\/g, '/')],
  )
  const esm = JSON.parse(execFileSync(process.execPath, ['check.mjs'], { cwd: dir, encoding: 'utf8' }))
  assert.equal(esm.v, 1)
})

// `npm run build` compiles test hooks in (a forced panic, the heap byte count, ...) for the tests:
// the packed binary is built as the release builds it, and the test build stays in place.
test('pack:local packs the release addon: none of the test hooks, and the test build left as it was', { skip, timeout: 120_000 }, () => {
  const installed = join(dir, 'node_modules', target.packageName, binaryFile)
  assert.deepEqual(testHooksIn(installed), [], 'the installed binary exports a test hook')
  // The list the check reads is exactly what the test build adds to the release build.
  const published = exportsOf(installed)
  const added = exportsOf(join(root, binaryFile)).filter((n) => !published.includes(n))
  assert.deepEqual(added, releaseArtifact ? [] : [...TEST_HOOK_EXPORTS])
  assert.equal(sha256(join(root, binaryFile)), testBuildBefore, 'pack:local replaced the test build')
})

// A library's typings must not depend on the consumer's lib or on @types/node: strict,
// skipLibCheck false, lib es2022 alone, es2022 + dom, esnext + @types/node, each under
// module commonjs, nodenext and bundler.
test('the installed typings compile in every strict set-up: lib with or without disposables, with or without @types/node, any module system', { skip, timeout: 120_000 }, () => {
  const ts = require('typescript')
  const setups = consumerSetups(dir, [join(root, 'node_modules/@types')])
  assert.equal(setups.length, 9)
  const failed = checkSetups(ts, dir, setups).filter((r) => r.errors)
  assert.deepEqual(failed.map((r) => r.name), [], failed.map((r) => `${r.name}:\n${r.errors}`).join('\n'))
})

// Last: its peers stay out of the project until it installs them.
test('resilix/prometheus and resilix/otel: no peer loaded by resilix, a missing one named, then both working and typed', { skip, timeout: 120_000 }, () => {
  writeFileSync(join(dir, 'no-peers.cjs'), NO_PEERS)
  const noPeers = JSON.parse(execFileSync(process.execPath, ['no-peers.cjs'], { cwd: dir, encoding: 'utf8' }))
  assert.equal(noPeers.before, 0, 'require("resilix") loads no metrics library')
  assert.equal(noPeers.codes['resilix/prometheus'][0], 'ERR_RESILIX_PEER_MISSING')
  assert.match(noPeers.codes['resilix/prometheus'][1], /npm install prom-client/)
  assert.equal(noPeers.codes['resilix/otel'][0], 'ERR_RESILIX_PEER_MISSING')
  assert.match(noPeers.codes['resilix/otel'][1], /npm install @opentelemetry\/api/)

  // The optional peers, as the user installs them (borrowed from this repository).
  for (const p of ['prom-client', 'bintrees', 'tdigest', '@opentelemetry']) {
    cpSync(join(root, 'node_modules', p), join(dir, 'node_modules', p), { recursive: true })
  }
  writeFileSync(join(dir, 'metrics.mjs'), METRICS)
  const viaMetrics = JSON.parse(execFileSync(process.execPath, ['metrics.mjs'], { cwd: dir, encoding: 'utf8' }))
  assert.deepEqual(viaMetrics, { answered: true, otel: true, cjsSame: true })

  // Their typings against the peers' own, strict, from the installed tarball.
  writeFileSync(join(dir, 'metrics-types.mts'), METRICS_MTS)
  writeFileSync(
    join(dir, 'tsconfig.metrics.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', lib: ['esnext'],
        module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], typeRoots: [join(root, 'node_modules/@types')],
      },
      files: ['metrics-types.mts'],
    }),
  )
  const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.metrics.json'], { cwd: dir, encoding: 'utf8' })
  assert.equal(tsc.status, 0, `tsc failed:\n${tsc.stdout}${tsc.stderr}`)
})

// What two helpers' typings need beyond resilix's own, as README's Install section says: they name
// their peer's types, so they need what those need (ADR 0403). Strict, skipLibCheck false, no
// @types/node in `types`. After the test above: the metrics peers are installed.
const PEER_TYPINGS = {
  'undici-only.mts': "import { interceptor } from 'resilix/undici'\nexport type Interceptor = typeof interceptor\n",
  'undici-agent.mts': "import { Resilix } from 'resilix'\nimport { interceptor } from 'resilix/undici'\nimport { Agent } from 'undici'\nexport const a = new Agent().compose(interceptor(new Resilix(), { key: (o) => String(o.origin) }))\n",
  'undici-alone.mts': "import { Agent } from 'undici'\nexport const a = new Agent()\n",
  'otel.mts': "import { metrics } from '@opentelemetry/api'\nimport { Resilix } from 'resilix'\nimport { instrument } from 'resilix/otel'\ninstrument(new Resilix(), { meter: metrics.getMeter('m') }).dispose()\n",
  'others.mts': "import { Registry } from 'prom-client'\nimport { Resilix } from 'resilix'\nimport { instrument } from 'resilix/prometheus'\nimport { redisQuotaStore } from 'resilix/redis'\ninstrument(new Resilix(), { registry: new Registry() }).dispose()\nexport const s = redisQuotaStore\n",
}
// typeRoots as tsc sets them for a tsconfig.json in the project (the API defaults to the working
// directory's, this repository's, which has @types/node); `withNode` borrows this repository's.
const peerSetup = (name, files, lib, project, withNode = false) => ({
  name,
  config: {
    compilerOptions: {
      strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', lib, module: 'nodenext', moduleResolution: 'nodenext', types: [],
      typeRoots: [join(withNode ? root : project, 'node_modules/@types')],
    },
    files,
  },
})
/** tsc's errors of one set-up: [{ file, code, text }] (file '' for an error of no file). */
const errorsOf = ({ errors }) =>
  [...errors.matchAll(/^(?:(.*?)\(\d+,\d+\): )?error (TS\d+): (.*)$/gm)].map(([, file = '', code, text]) => ({ file: file.replace(/\\/g, '/'), code, text }))

test("the helpers' typings need what their peer's need: resilix/undici undici and @types/node, resilix/otel lib dom or @types/node, as README says", { skip, timeout: 300_000 }, () => {
  const ts = require('typescript')
  const install = /\n## Install\n[\s\S]*?(?=\n## )/.exec(readFileSync(join(root, 'README.md'), 'utf8'))[0]
  assert.match(install, /`resilix\/undici` needs undici 7 or newer/)
  assert.match(install.replace(/\s+/g, ' '), /`resilix\/undici` needs `@types\/node` installed, as undici's own typings do/)
  assert.match(install.replace(/\s+/g, ' '), /`resilix\/otel` needs `lib` `dom` or `@types\/node`/)

  for (const [name, text] of Object.entries(PEER_TYPINGS)) writeFileSync(join(dir, name), text)
  // The peers, as the test above installs them (when it did not run).
  for (const p of ['prom-client', 'bintrees', 'tdigest', '@opentelemetry']) {
    if (!existsSync(join(dir, 'node_modules', p))) cpSync(join(root, 'node_modules', p), join(dir, 'node_modules', p), { recursive: true })
  }
  const dom = ['es2022', 'dom']
  const [agent, alone, withNode, otelNoDom, otelDom, others] = checkSetups(ts, dir, [
    peerSetup('undici, no @types/node', ['undici-agent.mts'], dom, dir),
    peerSetup('undici alone, no @types/node', ['undici-alone.mts'], dom, dir),
    peerSetup('undici, @types/node installed', ['undici-agent.mts'], ['es2022'], dir, true),
    peerSetup('otel, lib es2022, no @types/node', ['otel.mts'], ['es2022'], dir),
    peerSetup('otel, lib es2022 + dom', ['otel.mts'], dom, dir),
    peerSetup('prometheus and redis, lib es2022, no @types/node', ['others.mts'], ['es2022'], dir),
  ]).map(errorsOf)

  // Without undici: the one error is the missing module.
  const bare = mkdtempSync(join(tmpdir(), 'resilix-no-undici-'))
  try {
    cpSync(join(dir, 'node_modules/resilix'), join(bare, 'node_modules/resilix'), { recursive: true })
    writeFileSync(join(bare, 'undici-only.mts'), PEER_TYPINGS['undici-only.mts'])
    const [missing] = checkSetups(ts, bare, [peerSetup('no undici', ['undici-only.mts'], dom, bare)]).map(errorsOf)
    assert.deepEqual(missing.map((e) => [e.file.replace(/^.*\/node_modules\//, ''), e.code]), [['resilix/undici.d.ts', 'TS2307']])
    assert.match(missing[0].text, /Cannot find module 'undici'/)
  } finally {
    rmSync(bare, { recursive: true, force: true })
  }

  // Without @types/node, every error is in undici's own files, as many as undici alone has.
  assert.ok(agent.length > 0, 'undici compiled without @types/node: the README says it needs it')
  assert.deepEqual(agent.filter((e) => !e.file.includes('/node_modules/undici/')), [])
  assert.equal(agent.length, alone.length)
  assert.deepEqual(withNode, [])

  // resilix/otel: @opentelemetry/api names console, which lib es2022 alone lacks.
  assert.ok(otelNoDom.length > 0)
  assert.deepEqual(otelNoDom.filter((e) => !e.file.includes('/node_modules/@opentelemetry/api/')), [])
  assert.ok(otelNoDom.some((e) => /'console'/.test(e.text)))
  assert.deepEqual(otelDom, [])
  assert.deepEqual(others, [])
})

// A binary handed to it is checked: the test build is refused, naming its hooks. (Empties dist-pack/.)
test('pack:local --binary refuses the test build, naming its hooks', { skip: skip || (releaseArtifact && 'the root binary is a release build'), timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [join(root, 'scripts/pack-local.mjs'), '--binary', join(root, binaryFile)], { cwd: root, encoding: 'utf8' })
  assert.equal(r.status, 1, r.stdout + r.stderr)
  assert.match(r.stderr, new RegExp(`pack:local: .*${binaryFile.replace(/\./g, '\\.')} exports test hooks \\(${TEST_HOOK_EXPORTS.join(', ')}\\), which are never published`))
  assert.match(r.stderr, /Nothing was packed/)
  assert.equal(r.stdout, '')
  assert.deepEqual(readdirSync(join(root, 'dist-pack')), [])
})

// Without a Rust toolchain there is no release build: pack:local says so and packs nothing, rather
// than the test build it finds in the repository root. (Last: it empties dist-pack/.)
test('pack:local refuses, naming the build, when the release addon cannot be built', { skip, timeout: 120_000 }, () => {
  // A PATH with node alone: no cargo.
  const bin = mkdtempSync(join(tmpdir(), 'resilix-no-cargo-'))
  try {
    symlinkSync(process.execPath, join(bin, 'node'))
    const env = { ...process.env, PATH: bin }
    delete env.CARGO
    const r = spawnSync(process.execPath, [join(root, 'scripts/pack-local.mjs')], { cwd: root, env, encoding: 'utf8' })
    assert.equal(r.status, 1, r.stdout + r.stderr)
    assert.match(r.stderr, /pack:local: building the addon as the registry gets it \(the build:release command, with a Rust toolchain\) failed/)
    assert.match(r.stderr, /Nothing was packed/)
    assert.equal(r.stdout, '')
    assert.deepEqual(readdirSync(join(root, 'dist-pack')), [])
  } finally {
    rmSync(bin, { recursive: true, force: true })
  }
})
