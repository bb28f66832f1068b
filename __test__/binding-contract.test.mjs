// The contract between the binding and the JS layer (ADR 1210): every export of the addon is
// declared in native.d.ts, the clock cell's elements are used by the names wireCodes() hands
// over, and a tenant's level and id each cross the boundary once.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const require = createRequire(import.meta.url)
const native = require('../native.js')
const { clockCell, CELL, LEVELS, CLASS_LEVELS, DEFAULT_LEVEL, PRIORITIES, STALE_HANDLE } = require('../lib/native.js')
const root = fileURLToPath(new URL('..', import.meta.url))

/** native.d.ts's exported names: `name → true` when declared as possibly absent. */
function declared() {
  const dts = readFileSync(join(root, 'native.d.ts'), 'utf8')
  const names = new Map()
  for (const m of dts.matchAll(/^export declare function (\w+)/gm)) names.set(m[1], false)
  for (const m of dts.matchAll(/^export declare const (\w+): ([^\n]+)/gm)) names.set(m[1], /\| undefined$/.test(m[2]))
  return names
}

test('contract: every export of the loaded addon is declared in native.d.ts', () => {
  const names = declared()
  const undeclared = Object.keys(native).filter((k) => !names.has(k))
  assert.deepEqual(undeclared, [], `exported by the addon, not declared in native.d.ts: ${undeclared.join(', ')}`)
})

test('contract: every declaration in native.d.ts that is always there is exported by the addon', () => {
  const missing = [...declared()].filter(([name, optional]) => !optional && !(name in native)).map(([name]) => name)
  assert.deepEqual(missing, [], `declared in native.d.ts, not exported: ${missing.join(', ')}`)
  for (const [name] of declared()) {
    if (name === 'clockCell') assert.ok(native.clockCell instanceof Float64Array)
    else if (name in native) assert.equal(typeof native[name], 'function', name)
  }
})

test('contract: the clock cell has one distinct element per name, all inside the cell', () => {
  assert.equal(clockCell.length, CELL.length)
  const { costs, length, ...single } = CELL
  const at = Object.values(single)
  const costSlots = [0, 1, 2, 3].map((i) => costs + i)
  const all = [...at, ...costSlots]
  assert.equal(new Set(all).size, all.length, `slots overlap: ${JSON.stringify(CELL)}`)
  for (const i of all) assert.ok(Number.isInteger(i) && i >= 0 && i < length, `slot ${i} outside the cell of ${length}`)
  assert.ok(Object.isFrozen(CELL))
})

test('contract: the JS layer indexes the clock cell by name, never by a number', () => {
  const files = []
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name))
      else if (e.name.endsWith('.js')) files.push(join(dir, e.name))
    }
  }
  walk(join(root, 'lib'))
  files.push(join(root, 'index.js'))
  const found = []
  for (const f of files) {
    const text = readFileSync(f, 'utf8')
    // A literal index on the cell, or on a local alias of it.
    for (const m of text.matchAll(/\b(clockCell|cell|a)\[\s*\d+\s*\]/g)) found.push(`${f.slice(root.length)}: ${m[0]}`)
  }
  assert.deepEqual(found, [])
})

test('contract: levelOf returns the level and hands the tenant id over in the cell', () => {
  const id = native.createEngine({ algorithm: 'fixed', initialLimit: 2 }, 1)
  try {
    const h = native.resolveKey(id, 'k')
    const high = PRIORITIES.indexOf('high')
    clockCell[CELL.tenant] = -1
    const level = native.levelOf(h, high, 'tenant-a')
    assert.ok(Number.isInteger(level) && level >= 0 && level < LEVELS, `level ${level} is not one of ${LEVELS}`)
    assert.ok(level <= CLASS_LEVELS[high] && level > CLASS_LEVELS[high - 1], `level ${level} is not in the class high`)
    const tenant = clockCell[CELL.tenant]
    assert.ok(Number.isInteger(tenant) && tenant > 0, `tenant id ${tenant}`)
    // The same tenant, the same id; another tenant, another id.
    native.levelOf(h, high, 'tenant-a')
    assert.equal(clockCell[CELL.tenant], tenant)
    native.levelOf(h, high, 'tenant-b')
    assert.notEqual(clockCell[CELL.tenant], tenant)
    // No tenant: id 0, the class's top level.
    assert.equal(native.levelOf(h, high, null), CLASS_LEVELS[high])
    assert.equal(clockCell[CELL.tenant], 0)
    // The levels acquireAt takes: a permit at the level levelOf gave.
    assert.ok(native.acquireAt(h, -1, level, tenant) >= 0)
    // A stale handle: the code, and the cell left as it was.
    clockCell[CELL.tenant] = 7
    assert.equal(native.levelOf(h + 1, high, 'tenant-a'), STALE_HANDLE)
    assert.equal(clockCell[CELL.tenant], 7)
  } finally {
    native.destroyEngine(id)
  }
})

test('contract: limits and defaults the engine holds are the ones the JS layer reads', () => {
  const codes = native.wireCodes()
  assert.equal(DEFAULT_LEVEL, codes.defaultLevel)
  assert.equal(CLASS_LEVELS[PRIORITIES.indexOf('normal')], DEFAULT_LEVEL)
  assert.equal(LEVELS, CLASS_LEVELS.length * codes.ranks)
  assert.equal(require('../lib/levels.js').LEVELS, LEVELS)
  assert.deepEqual(require('../lib/options.js').ALGORITHMS, codes.algorithms)
  assert.equal(require('../lib/options.js').MAX_TIMEOUT_MS, codes.maxMs)
  const quota = require('../lib/quota.js')
  assert.equal(quota.MAX_COSTS, codes.quotaCosts)
  assert.equal(quota.MAX_BUDGETS, codes.quotaBudgets)
  // the costs' run of slots ends where the next named slot begins
  assert.equal(quota.MAX_COSTS, CELL.answer - CELL.costs)
  assert.deepEqual(require('../lib/retry-options.js').RETRYABLE, codes.retryable)
  assert.deepEqual(require('../lib/retry-options.js').DEFAULTS.retryOn, codes.retryable)
})

test('contract: a budget named like an Object.prototype member is a budget, not an internal error', async () => {
  const { Resilix } = require('../index.js')
  for (const name of ['toString', 'constructor', 'valueOf']) {
    const rx = new Resilix({ quota: { [name]: 5 } })
    assert.equal(await rx.execute(async () => 'ok', { key: 'k', cost: { [name]: 2 } }), 'ok')
    assert.deepEqual(rx.stats('k').quota.budgets, [{ name, windowMs: 60000, limit: 5, spent: 2 }])
    rx.close()
  }
})
