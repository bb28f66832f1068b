// .github/workflows/release.yml cannot run here; this checks that it parses and that its structure
// matches package.json: a build entry per napi target, tests per platform under Node 20/22/24,
// `napi artifacts` and publishing only on a version tag, after every test.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import YAML from 'yaml'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const source = readFileSync(join(root, '.github/workflows/release.yml'), 'utf8')
const targets = [...pkg.napi.targets].sort()

function parse() {
  const doc = YAML.parseDocument(source, { prettyErrors: true })
  assert.deepEqual(doc.errors, [], 'YAML errors')
  assert.deepEqual(doc.warnings, [], 'YAML warnings')
  return doc.toJS()
}
const wf = parse()
const runs = (job) => job.steps.map((s) => s.run ?? '').join('\n')
const uses = (job) => job.steps.map((s) => s.uses ?? '').filter(Boolean)

test('release.yml parses as YAML with no errors or warnings', () => {
  assert.equal(typeof wf.name, 'string')
  assert.deepEqual(Object.keys(wf.jobs).sort(), ['build', 'publish', 'test-linux', 'test-macos-windows'])
  for (const [name, job] of Object.entries(wf.jobs)) {
    assert.ok(job['runs-on'], `${name} runs-on`)
    assert.ok(Array.isArray(job.steps) && job.steps.length > 0, `${name} steps`)
    for (const step of job.steps) assert.ok(step.uses || step.run, `${name}: a step with neither uses nor run`)
  }
})

test('triggers: pushes to main, pull requests, and version tags', () => {
  assert.deepEqual(wf.on.push.branches, ['main'])
  assert.deepEqual(wf.on.push.tags, ['v*'])
  assert.ok('pull_request' in wf.on)
})

test('build: one matrix entry per napi target, each building that target and uploading its binary', () => {
  const entries = wf.jobs.build.strategy.matrix.settings
  assert.deepEqual(entries.map((e) => e.target).sort(), targets)
  for (const e of entries) {
    assert.ok(e.host, `${e.target} host`)
    assert.match(e.build, new RegExp(`--target ${e.target}(\\s|$)`), `${e.target} builds itself`)
    if (e.target.endsWith('linux-gnu')) assert.match(e.build, /--use-napi-cross/, `${e.target}: old glibc floor`)
    if (e.target.endsWith('linux-musl')) assert.match(e.build, / -x(\s|$)/, `${e.target}: zig linker`)
    if (e.target.includes('apple')) assert.match(e.host, /^macos/)
    if (e.target.includes('windows')) assert.match(e.host, /^windows/)
  }
  const upload = wf.jobs.build.steps.find((s) => (s.uses ?? '').startsWith('actions/upload-artifact'))
  assert.equal(upload.with.name, 'bindings-${{ matrix.settings.target }}')
  assert.equal(upload.with.path, 'resilix.*.node')
  assert.ok(uses(wf.jobs.build).some((u) => u.startsWith('dtolnay/rust-toolchain')))
})

test('tests: every target is tested on its platform under Node 20, 22 and 24', () => {
  const mw = wf.jobs['test-macos-windows'].strategy.matrix
  const linux = wf.jobs['test-linux'].strategy.matrix
  const tested = [...mw.settings.map((s) => s.target), ...linux.target].sort()
  assert.deepEqual(tested, targets)
  for (const m of [mw, linux]) assert.deepEqual(m.node, ['20', '22', '24'])
  for (const name of ['test-macos-windows', 'test-linux']) {
    const job = wf.jobs[name]
    assert.equal(job.needs, 'build')
    assert.match(runs(job), /node --test/)
    const download = job.steps.find((s) => (s.uses ?? '').startsWith('actions/download-artifact'))
    assert.match(download.with.name, /^bindings-\$\{\{ matrix\.(settings\.)?target \}\}$/)
  }
  // musl is tested on Alpine, glibc Linux on Debian (slim).
  assert.match(runs(wf.jobs['test-linux']), /alpine/)
  assert.match(runs(wf.jobs['test-linux']), /slim/)
})

test('build and test jobs install with --force and drop the linux-x64-only node22/node24 devDependencies', () => {
  for (const name of ['build', 'test-macos-windows', 'test-linux']) {
    const script = runs(wf.jobs[name])
    assert.match(script, /npm ci --ignore-scripts --force/, name)
    assert.match(script, /rm -rf node_modules\/node22 node_modules\/node24 node_modules\/\.bin\/node /, name)
  }
})

test('publish: only on a v* tag, after every test, via napi artifacts and pre-publish', () => {
  const job = wf.jobs.publish
  assert.match(job.if, /startsWith\(github\.ref, 'refs\/tags\/v'\)/)
  assert.deepEqual([...job.needs].sort(), ['build', 'test-linux', 'test-macos-windows'])
  const script = runs(job)
  const order = ['napi artifacts', 'napi pre-publish', 'npm publish'].map((cmd) => script.indexOf(cmd))
  assert.ok(order.every((i) => i >= 0), `publish runs ${order}`)
  assert.deepEqual([...order].sort((a, b) => a - b), order, 'artifacts, then pre-publish, then publish')
  const download = job.steps.find((s) => (s.uses ?? '').startsWith('actions/download-artifact'))
  assert.equal(download.with.pattern, 'bindings-*')
  assert.equal(job.permissions['id-token'], 'write')
  assert.match(script, /require\('\.\/package\.json'\)\.version/, 'the tag must equal the package version')
  // The main package goes out from the staged directory: its manifest has no scripts and no
  // devDependencies. A publish from the repository root is refused by prepublishOnly.
  const staged = /node scripts\/stage-package\.mjs (\S+)\n\s*npm publish \.\/(\S+) /.exec(script)
  assert.ok(staged, 'stages the package, then publishes that directory')
  assert.equal(staged[1], staged[2])
  assert.ok(script.indexOf('napi pre-publish') < staged.index, 'stages after pre-publish wrote optionalDependencies')
  assert.match(pkg.scripts.prepublishOnly, /exit 1/)
})

// `napi build --use-napi-cross` loads the @napi-rs/cross-toolchain package. It is not a
// devDependency (its peer dependencies pull every toolchain into every dev install): the
// build job installs it, with the one toolchain it needs, before any --use-napi-cross build.
test('every --use-napi-cross build installs its cross toolchain first', () => {
  const job = wf.jobs.build
  const steps = job.steps.map((s) => `${s.name ?? ''} ${s.run ?? ''}`)
  const install = steps.findIndex((s) => /npm install[^\n]*@napi-rs\/cross-toolchain@/.test(s))
  const build = steps.findIndex((s) => s.includes('matrix.settings.build'))
  assert.ok(install >= 0, 'a step installs @napi-rs/cross-toolchain')
  assert.ok(install < build, 'before the build step')
  const crossTargets = job.strategy.matrix.settings.filter((m) => m.build.includes('--use-napi-cross')).map((m) => m.target)
  assert.ok(crossTargets.length > 0)
  assert.ok(crossTargets.every((t) => t.includes('linux-gnu')), 'the install step runs for every cross target')
})
