// Issue 8, a binding bug found by these tests (src/binding/engines.rs, to be fixed there): the
// engine-id arguments are `u32`, and napi coerces any number to u32 without complaint — NaN,
// ±Infinity and 1e300 become 0, 1.5 becomes 1, -1 becomes 4294967295. So `destroyEngine(NaN)`
// frees engine 0, `stats(NaN, key)` reads engine 0, and a NaN verdict settles as 'success'.
// The public API never passes such values (ids come from createEngine, verdicts from a table),
// so users are not exposed; the binding's own contract ("never corrupted state") is broken.
// FAILS until the binding takes f64 ids/verdicts and refuses non-integers (InvalidArg).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const native = createRequire(import.meta.url)('../native.js')
const BAD_VERDICT = -5

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
