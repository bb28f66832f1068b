// The ESLint config of `npm run lint` (ADR 1215): it covers every JavaScript file of the package,
// its tests, scripts, benchmarks, examples and demo, skips build output and generated files, and
// its rules are in force.
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const eslint = new ESLint({ cwd: root })
const rulesOf = async (code, filePath) => {
  const [r] = await eslint.lintText(code, { filePath: join(root, filePath) })
  return r.messages.map((m) => m.ruleId ?? m.message).sort()
}

// The repository's JavaScript files, outside build output, installs and the per-platform packages
// (no git needed: the release workflow runs these tests in images without it).
function sources(dir = '') {
  const skip = new Set(['.git', 'node_modules', 'target', 'npm', 'dist-pack', 'dist-package', '.tmp', 'demo/out'])
  const out = []
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${e.name}` : e.name
    if (e.isDirectory() && !skip.has(rel)) out.push(...sources(rel))
    else if (e.isFile() && /\.[cm]?js$/.test(e.name)) out.push(rel)
  }
  return out
}

test('every JavaScript file is linted, except the generated loader', async () => {
  const files = sources()
  for (const dir of ['lib/', '__test__/', 'scripts/', 'benches/', 'examples/', 'demo/']) {
    assert.ok(files.some((f) => f.startsWith(dir)), `a file under ${dir}`)
  }
  const ignored = []
  for (const f of files) if (await eslint.isPathIgnored(join(root, f))) ignored.push(f)
  assert.deepEqual(ignored, ['native.js'])
  for (const f of ['target/release/build/x.js', 'node_modules/eslint/lib/api.js', 'npm/linux-x64-gnu/index.js']) {
    assert.ok(await eslint.isPathIgnored(join(root, f)), `${f} is ignored`)
  }
})

test('the rules: unused bindings, loose equality, var, let never reassigned, thrown strings', async () => {
  const code = [
    'var a = 1',
    'let b = 2',
    'const unused = 3',
    'function f(x, _y) { if (x == 1) throw "no"; return a + b }',
    'module.exports = f',
    '',
  ].join('\n')
  assert.deepEqual(await rulesOf(code, 'lib/example.js'),
    ['eqeqeq', 'no-throw-literal', 'no-unused-vars', 'no-var', 'prefer-const'])
})

test('kept on purpose: `_` names, `== null`, an empty catch; the console only outside the package', async () => {
  const code = [
    'function f(_x, y) {',
    '  try { JSON.parse(y) } catch {}',
    '  const [_first, second] = [1, 2]',
    '  return y == null ? second : 0',
    '}',
    'module.exports = f',
    '',
  ].join('\n')
  assert.deepEqual(await rulesOf(code, 'lib/example.js'), [])
  const log = 'console.log(process.version)\n'
  assert.deepEqual(await rulesOf(log, 'lib/example.js'), ['no-console'])
  assert.deepEqual(await rulesOf(log, 'scripts/example.mjs'), [])
})

test('module kinds: .js is CommonJS, .mjs an ES module, and Node globals are known', async () => {
  assert.deepEqual(await rulesOf("const { join } = require('node:path')\nmodule.exports = join(__dirname, 'x')\n", 'lib/example.js'), [])
  assert.deepEqual(await rulesOf("import { join } from 'node:path'\nexport const p = join(import.meta.dirname, 'x')\n", 'scripts/example.mjs'), [])
  assert.ok((await rulesOf('export const p = 1\n', 'lib/example.js')).length > 0, 'export in a .js file is a parse error')
  assert.deepEqual(await rulesOf('setTimeout(() => Bun.version, 1)\n', '__test__/compat/example.mjs'), [])
  assert.deepEqual(await rulesOf('setTimeout(() => Bun.version, 1)\n', 'lib/example.js'), ['no-undef'])
})
