// Issue 8: load and soak. 1 000 000 calls at 10 000 concurrency over 20 keys with random
// verdicts, aborts and deadlines (fixtures/soak.cjs, in a child with --expose-gc). Afterwards:
// every key has inflight 0 and queued 0, every fn that ran got exactly one verdict, every
// caller got exactly one answer, and the heap is flat between 100 000 calls and the end.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./fixtures/soak.cjs', import.meta.url))
const MB = 1024 * 1024

test('soak: 1 000 000 calls at 10 000 concurrency leave nothing in flight or queued, heap flat', async (t) => {
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', script, '1000000', '10000'], { timeout: 240_000, maxBuffer: 16 * MB }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`))
      else resolve(stdout)
    })
  })
  const r = JSON.parse(out.trim().split('\n').at(-1))
  assert.notEqual(r.hung, true, `calls never answered: ${out}`)
  assert.equal(r.calls, 1_000_000)
  assert.equal(r.running, 0, 'every fn settled')
  assert.equal(r.perKey.length, 60)
  for (const s of r.perKey) {
    assert.equal(s.inflight, 0)
    assert.equal(s.queued, 0)
    assert.equal(s.bulkhead, 0)
  }
  const answered = Object.values(r.counts).reduce((a, b) => a + b, 0)
  assert.equal(answered, 1_000_000, 'every caller answered exactly once')
  assert.equal(r.counts.other, 0, 'no unexpected error reached a caller')
  for (const k of ['ok', 'failed', 'rejected', 'timeout', 'aborted']) assert.ok(r.counts[k] > 1000, `${k}: ${r.counts[k]}`)
  for (const k of ['queue', 'breaker', 'bulkhead']) assert.ok(r.reasons[k] > 100, `rejections ${k}: ${r.reasons[k]}`)
  const verdicts = Object.values(r.verdicts).reduce((a, b) => a + b, 0)
  assert.equal(verdicts, r.ran, 'every fn that ran has exactly one verdict')
  assert.equal(r.verdicts.rejected, 0)
  assert.ok(r.heapGrowth < 1 * MB, `heapUsed grew ${(r.heapGrowth / MB).toFixed(2)} MB`)
  // Native memory (RSS outside V8's committed heap) over the second half; bounds as in
  // untrusted-keys.test.mjs (Node 22/24 grow RSS in plain-JS loops too).
  const major = Number(process.versions.node.split('.')[0])
  const bound = major <= 20 ? 32 * MB : 64 * MB
  assert.ok(r.nativeGrowth2 < bound, `native memory grew ${(r.nativeGrowth2 / MB).toFixed(2)} MB over the second 500 000 calls`)
  t.diagnostic(`soak: ${r.calls} calls in ${(r.ms / 1000).toFixed(1)} s, ${r.ran} ran; heap ${(r.heapGrowth / 1024).toFixed(0)} KiB after 100 000 calls, native ${(r.nativeGrowth2 / 1024).toFixed(0)} KiB over the second half; ${JSON.stringify(r.reasons)}`)
})
