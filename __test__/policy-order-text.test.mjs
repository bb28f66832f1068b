// Every line of the product text that states the order of the policies states the one order the
// composition tests (composition-*.test.mjs) hold: retry → breaker → quota → throttle → limiter
// (+ queue) → bulkhead → timeout.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

const ORDER = ['retry', 'breaker', 'quota', 'throttle', 'limiter', 'bulkhead', 'timeout']
const read = (f) => readFileSync(new URL(`../${f}`, import.meta.url), 'utf8')

/** The policy names a line lists with arrows, in its order. */
function arrowsOf(line) {
  const at = line.indexOf('retry →')
  return line
    .slice(at)
    .split('→')
    .map((p) => p.trim().split(/\s/)[0].replace(/^\*+|[*.`:]+$/g, ''))
}

for (const file of ['README.md', 'index.d.ts', 'docs/design.md']) {
  test(`${file}: every line that states the policy order states all seven, in order`, () => {
    const lines = read(file).split('\n')
    let stated = 0
    for (let i = 0; i < lines.length; i++) {
      // A statement may wrap onto the next line (JSDoc): read the two together.
      const text = lines[i].includes('retry →') ? `${lines[i]} ${(lines[i + 1] ?? '').replace(/^\s*\*\s*/, '')}` : null
      if (text === null) continue
      stated++
      const chain = arrowsOf(text).slice(0, ORDER.length)
      assert.deepEqual(chain, ORDER, `${file}:${i + 1}: ${lines[i].trim()}`)
    }
    assert.ok(stated >= 1, `${file} states the order`)
  })
}

test("README.md: the diagram of a call's path lists the policies in the documented order", () => {
  const readme = read('README.md')
  const from = readme.indexOf('execute(fn, { key })')
  const block = readme.slice(from, readme.indexOf('```', from))
  const names = block
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/)[0])
    .filter((w) => ORDER.includes(w) || w === 'fn(ctx)')
  assert.deepEqual(names, [...ORDER.slice(0, -1), 'fn(ctx)'])
  assert.match(block, /fn\(ctx\)\s+under the deadline/, 'the deadline is innermost, around fn')
})
