// Engine ids and verdict codes cross as numbers. The binding takes them as f64 and
// refuses non-integers, so NaN, ±Infinity, 1e300 or 1.5 never coerce to engine 0 or to a real
// verdict (napi's u32 conversion would). The public API never passes such values; the
// binding's own contract ("never corrupted state") is what is tested here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const native = createRequire(import.meta.url)('../native.js')
const { BAD_VERDICT } = createRequire(import.meta.url)('../lib/native.js')

test('binding ids: a non-integer engine id never reaches another engine', () => {
  const id = native.createEngine({ algorithm: 'fixed' }, 1)
  native.resolveKey(id, 'k')
  for (const bad of [NaN, Infinity, -Infinity, 1e300, id + 0.5, -1]) {
    assert.throws(() => native.stats(bad, 'k'), /InvalidArg|engine/, `stats(${bad})`)
    assert.throws(() => native.keys(bad), /InvalidArg|engine/, `keys(${bad})`)
    assert.throws(() => native.resolveKey(bad, 'other'), /InvalidArg|engine/, `resolveKey(${bad})`)
    native.destroyEngine(bad) // must be a no-op
    assert.ok(native.stats(id, 'k') !== null, `destroyEngine(${bad}) freed engine ${id}`)
  }
  native.destroyEngine(id)
})

test('binding ids: a non-integer verdict code is BAD_VERDICT, not success/failure', () => {
  const id = native.createEngine({ algorithm: 'fixed' }, 1)
  const h = native.resolveKey(id, 'k')
  const p = native.acquire(h)
  for (const v of [NaN, Infinity, -Infinity, 0.5, 1.5, 1e300]) {
    assert.equal(native.settle(h, p, v), BAD_VERDICT, `verdict ${v}`)
  }
  assert.equal(native.stats(id, 'k').inflight, 1)
  native.destroyEngine(id)
})
