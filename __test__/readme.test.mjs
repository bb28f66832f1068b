// The README is the reference (issue 9): it must not drift from the typed surface. These checks
// read README.md and index.d.ts as text: every option has a row in the Options table with the
// default index.d.ts states, every verdict and every rejection reason has a row, and the README
// still opens with the two commands.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')

/** The text of a `## title` section, up to the next `## ` heading. */
function section(title) {
  const start = readme.indexOf(`\n## ${title}\n`)
  assert.ok(start >= 0, `README has a "## ${title}" section`)
  const end = readme.indexOf('\n## ', start + 1)
  return readme.slice(start, end < 0 ? undefined : end)
}

/** Table rows of a section as arrays of cells; the first cell's backticks are removed. */
function rows(text) {
  return text
    .split('\n')
    .filter((l) => l.startsWith('| ') && !/^\|[-| ]+\|$/.test(l))
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    )
}

/** `{ option: 'Default …' text }` for every documented property of a d.ts interface. */
function documented(iface, prefix) {
  const m = new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`).exec(dts)
  assert.ok(m, `index.d.ts declares ${iface}`)
  const out = {}
  for (const p of m[1].matchAll(/\/\*\*([\s\S]*?)\*\/\s*\n\s*(\w+)\??:/g)) out[prefix + p[2]] = p[1]
  return out
}

test('README opens with the two commands', () => {
  const lines = readme.split('\n')
  assert.equal(lines[0], '# resilix')
  assert.equal(lines[2], '```sh')
  assert.match(lines[3], /^npm install && npm run demo\s/)
  assert.match(lines[4], /^npm test\s/)
})

test('README says in bold that streams must call ctx.mark()', () => {
  assert.ok(readme.includes('**If you stream, you must call `ctx.mark()`, or the limiter will mis-tune.**'))
})

test('every option of index.d.ts has a row in the Options table, with the same default', () => {
  const table = new Map(rows(section('Options')).map((r) => [r[0].replace(/`/g, ''), r]))
  const options = {
    ...documented('ResilixOptions', ''),
    ...documented('QueueOptions', 'queue.'),
    ...documented('BreakerOptions', 'breaker.'),
    ...documented('BulkheadOptions', 'bulkhead.'),
  }
  assert.ok(Object.keys(options).length >= 30)
  for (const [name, doc] of Object.entries(options)) {
    const row = table.get(name)
    assert.ok(row, `Options table has a row for ${name}`)
    assert.ok(row.length >= 4, `${name}: default, source and accepted range columns`)
    const d = /Default (-?[\d.]+)[ .,;(]/.exec(doc)
    if (d) {
      const readmeDefault = Number(row[1].replace(/[ `]/g, '').replace(/\(.*$/, ''))
      assert.equal(readmeDefault, Number(d[1]), `${name}: README default ${row[1]}, index.d.ts ${d[1]}`)
    }
  }
})

test('every verdict and every rejection reason is documented', () => {
  const verdicts = /export type Verdict = ([^\n]+)/.exec(dts)[1].match(/'[\w-]+'/g)
  const classification = section('Verdicts and classification')
  for (const v of verdicts) assert.ok(classification.includes('`' + v.slice(1, -1) + '`'), `verdict ${v}`)
  const reasons = /export type RejectReason = ([^\n]+)/.exec(dts)[1].match(/'[\w-]+'/g)
  const errorRows = rows(section('Errors')).map((r) => r[0])
  for (const r of reasons) assert.ok(errorRows.includes('`' + r + '`'), `reason ${r} has a row in the Errors section`)
})
