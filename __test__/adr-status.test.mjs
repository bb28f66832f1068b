// Every ADR states its status in its first lines, and one that is superseded names by which ADR.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = join(import.meta.dirname, '..', 'docs', 'adr')
const adrs = readdirSync(dir).filter((f) => /^\d{4}-.*\.md$/.test(f))

test('every ADR has a status line among its first lines', () => {
  assert.ok(adrs.length > 50)
  const missing = adrs.filter((f) => !/^Status: (Accepted|Superseded|Rejected|Deprecated)\b/m.test(readFileSync(join(dir, f), 'utf8').split('\n').slice(0, 8).join('\n')))
  assert.deepEqual(missing, [])
})

test('a superseded ADR names the ADR that supersedes it', () => {
  for (const f of adrs) {
    const status = /^Status: (.*)$/m.exec(readFileSync(join(dir, f), 'utf8'))[1]
    if (/^Superseded/.test(status)) assert.match(status, /^Superseded by ADR \d{4}/, f)
  }
})
