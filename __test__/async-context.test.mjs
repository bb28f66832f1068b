// AsyncLocalStorage context set by the caller is visible inside fn: for a call that runs at once
// and for a call that waited in the queue (p-limit #71: its users lost the context there). A
// queued fn is started by whichever call settles and frees the slot; without resilix's
// AsyncResource it would run in *that* call's context.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { fixed, sleep, deferred } from './helpers.mjs'

const als = new AsyncLocalStorage()
const id = () => als.getStore()?.id

test('async context: a direct call sees the caller context, before and after an await', async () => {
  const rx = fixed(1)
  const seen = await als.run({ id: 'direct' }, () =>
    rx.execute(async () => {
      const before = id()
      await sleep(1)
      return [before, id()]
    }),
  )
  assert.deepEqual(seen, ['direct', 'direct'])
})

test('async context: queued calls each see their own caller context, not the releasing call one', async () => {
  // algorithm 'fixed', initialLimit 1: the 2nd, 3rd and 4th calls queue (factors wide enough
  // that none of them is refused: the default (2, 3) would queue only one for certain)
  const rx = fixed(1, { queue: { initialFactor: 4, maxFactor: 5 } })
  const gate = deferred()
  const first = als.run({ id: 'first' }, () =>
    rx.execute(async () => {
      await gate.promise
      return id()
    }),
  )
  const queued = ['q1', 'q2', 'q3'].map((name) =>
    als.run({ id: name }, () =>
      rx.execute(async () => {
        const atStart = id()
        await sleep(1)
        return [atStart, id()]
      }),
    ),
  )
  assert.equal(rx.stats('default').queued, 3, 'the three calls wait in the queue')
  als.run({ id: 'releaser' }, () => gate.resolve())
  assert.equal(await first, 'first')
  assert.deepEqual(await Promise.all(queued), [
    ['q1', 'q1'],
    ['q2', 'q2'],
    ['q3', 'q3'],
  ])
})

test('async context: a queued call started by a synchronously settling fn keeps its own context', async () => {
  const rx = fixed(1)
  const gate = deferred()
  const first = als.run({ id: 'a' }, () => rx.execute(() => gate.promise))
  const second = als.run({ id: 'b' }, () => rx.execute(() => id())) // sync fn
  assert.equal(rx.stats('default').queued, 1)
  gate.resolve('done')
  assert.equal(await first, 'done')
  assert.equal(await second, 'b')
})
