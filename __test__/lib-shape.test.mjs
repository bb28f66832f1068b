// The JS layer's shape: no file of lib/ requires, at load or late, a file that requires it
// back (ADR 1200). A cycle is held together by lazy require()s whose order of loading decides
// what each file sees.
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const lib = join(root, 'lib')

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : [],
  )
}

/** Each file of lib/ → the files of lib/ it names in a require(), wherever the call is. */
function requireGraph() {
  const graph = new Map()
  for (const file of filesUnder(lib)) {
    const src = readFileSync(file, 'utf8')
    const deps = []
    for (const m of src.matchAll(/require\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)) {
      let target = resolve(dirname(file), m[1])
      if (!target.endsWith('.js')) target += '.js'
      if (target.startsWith(lib + '/')) deps.push(target)
    }
    graph.set(file, deps)
  }
  return graph
}

function findCycle(graph) {
  const state = new Map()
  const path = []
  function visit(f) {
    state.set(f, 'open')
    path.push(f)
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === 'open') return path.slice(path.indexOf(d)).concat(d)
      if (!state.has(d)) {
        const c = visit(d)
        if (c) return c
      }
    }
    path.pop()
    state.set(f, 'done')
    return null
  }
  for (const f of graph.keys()) {
    if (!state.has(f)) {
      const c = visit(f)
      if (c) return c
    }
  }
  return null
}

test('no file of lib/ requires a file that requires it back', () => {
  const graph = requireGraph()
  assert.ok(graph.size > 20, `read ${graph.size} files of lib/`)
  const cycle = findCycle(graph)
  assert.equal(cycle, null, cycle && `require cycle: ${cycle.map((f) => relative(root, f)).join(' → ')}`)
})

test('the cycle finder sees a cycle when there is one', () => {
  const a = '/x/a.js'
  const b = '/x/b.js'
  assert.deepEqual(findCycle(new Map([[a, [b]], [b, [a]]])), [a, b, a])
  assert.equal(findCycle(new Map([[a, [b]], [b, []]])), null)
})

const ORDER = ['retry', 'breaker', 'quota', 'throttle', 'limiter', 'bulkhead', 'timeout']

/** Every "retry → … → timeout" of `text`, as the list of policies it names. */
function ordersIn(text) {
  const flat = text.replace(/\s*\n\s*(?:\*|\/\/)?\s*/g, ' ')
  return [...flat.matchAll(/retry → (?:[^→\n]+ → )+?timeout/g)].map((m) =>
    m[0].split(' → ').map((s) => s.replace(/[*`]/g, '').replace(/\s*\(\+ queue\)|\s+and queue/, '').trim()),
  )
}

test('every place that writes the policy order writes the same one, quota included', () => {
  for (const file of ['README.md', 'index.js', 'index.d.ts', 'docs/design.md']) {
    const orders = ordersIn(readFileSync(join(root, file), 'utf8'))
    assert.ok(orders.length >= 1, `${file} writes the order`)
    for (const order of orders) assert.deepEqual(order, ORDER, `${file} writes ${order.join(' → ')}`)
  }
  // lib/retry.js writes what each attempt goes through: the order after retry.
  const flat = readFileSync(join(root, 'lib/retry.js'), 'utf8').replace(/\s*\n\s*(?:\*|\/\/)?\s*/g, ' ')
  assert.match(flat, /goes through breaker → quota → throttle → limiter → bulkhead → timeout/)
})

/** `name.prop… = value` lines of `src` where `name` is bound by a require(): a stage set from outside. */
function writesIntoRequired(src) {
  const bound = new Set()
  for (const m of src.matchAll(/(?:const|let|var)\s+(\w+|\{[^}]*\})\s*=\s*require\(/g)) {
    for (const part of m[1].replace(/[{}]/g, '').split(',')) {
      const name = part.split(':').pop().trim()
      if (name !== '') bound.add(name)
    }
  }
  const found = []
  for (const m of src.matchAll(/^\s*(\w+)((?:\.\w+)+)\s*=(?!=)/gm)) if (bound.has(m[1])) found.push(m[1] + m[2])
  return found
}

test('no file of lib/ sets functions into a module it requires (hook objects reaching back)', () => {
  const found = []
  for (const file of filesUnder(lib)) {
    for (const w of writesIntoRequired(readFileSync(file, 'utf8'))) found.push(`${relative(root, file)}: ${w}`)
  }
  assert.deepEqual(found, [])
})

test('the hook finder sees one', () => {
  assert.deepEqual(writesIntoRequired("const quota = require('./quota')\nquota.hooks.admitted = (c) => c\n"), ['quota.hooks.admitted'])
  assert.deepEqual(writesIntoRequired("const { retryHooks, x } = require('./call')\nretryHooks.refused = refused\nconst y = { a: 1 }\ny.a = 2\n"), ['retryHooks.refused'])
})

test('index.js and lib/pipeline.js stay under 250 lines: a policy adds its own files, not lines to the hub', () => {
  for (const file of ['index.js', 'lib/pipeline.js']) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n').length - 1
    assert.ok(lines < 250, `${file} has ${lines} lines`)
  }
})

// The stages that lib/pipeline.js wires, each with the same interface (ADR 1219): enter<Stage>(call, …)
// and leave<Stage>(call, …) return what happened; only the pipeline calls the next stage.
const STAGES = { 'lib/line.js': 'Line', 'lib/guard.js': 'Guard', 'lib/run-fn.js': 'Run', 'lib/settle.js': 'Settle' }

test('each stage that the pipeline wires exports its enter and leave', () => {
  const require = createRequire(import.meta.url)
  for (const [file, stage] of Object.entries(STAGES)) {
    const m = require(join(root, file))
    for (const name of [`enter${stage}`, `leave${stage}`]) assert.equal(typeof m[name], 'function', `${file} has no ${name}()`)
  }
})

test('no stage requires the pipeline or another stage: it returns what happened, the pipeline goes on', () => {
  const graph = requireGraph()
  const stages = Object.keys(STAGES).map((f) => join(root, f))
  const found = []
  for (const file of stages) {
    for (const dep of graph.get(file)) if (dep === join(lib, 'pipeline.js') || stages.includes(dep)) found.push(`${relative(root, file)} → ${relative(root, dep)}`)
  }
  assert.deepEqual(found, [])
})
