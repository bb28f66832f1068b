// The tuned constants of the adaptive limit sit in one table, engine/src/limit/tuning.rs, each
// with a doc comment that names the ADR holding its evidence. A numeric constant declared in
// another file of the limit (outside its tests) is a tuned value outside the table.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = join(import.meta.dirname, '..', 'engine', 'src', 'limit')
const table = 'tuning.rs'
const numeric = /^\s*(?:pub(?:\([a-z]+\))? )?const ([A-Z0-9_]+): (?:f64|f32|usize|u64|u32|i64|i32) =/gm

// The code of a file before its test module: tests keep their own fixtures.
const code = (f) => readFileSync(join(dir, f), 'utf8').split('#[cfg(test)]')[0]

test('no file of the limit but the table declares a numeric constant', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.rs') && f !== table && f !== 'tests.rs')
  assert.ok(files.includes('probe.rs') && files.includes('vegas.rs'))
  const outside = files.flatMap((f) => [...code(f).matchAll(numeric)].map((m) => `${f}: ${m[1]}`))
  assert.deepEqual(outside, [])
})

test('every constant of the table says which ADR holds its evidence', () => {
  const text = code(table)
  const consts = [...text.matchAll(numeric)]
  assert.ok(consts.length >= 20, `${consts.length} constants`)
  const lines = text.split('\n')
  const missing = []
  for (const [, name] of consts) {
    const at = lines.findIndex((l) => new RegExp(`const ${name}:`).test(l))
    let doc = ''
    for (let i = at - 1; i >= 0 && lines[i].startsWith('///'); i--) doc = lines[i].slice(3) + doc
    if (!/ADR\s+\d{4}/.test(doc)) missing.push(name)
  }
  assert.deepEqual(missing, [])
})
