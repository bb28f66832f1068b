// Every option default is written in four places: the engine's `Default` impls
// (engine/src/options.rs and engine/src/retry.rs, the values that run), the `///` docs of the
// binding's NativeOptions (src/binding/options.rs), the "Default …" of index.d.ts, and the
// README's Options table; the retry policy's also in lib/retry-options.js, which runs them.
// These tests hold the four equal, and check what the built addon exposes at run time against
// the engine's values, so that a default changed in one place fails here until every place says
// the same. The interceptor's defaults (bodyTimeoutMs, the content types mark reads) are held
// the same way.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { Resilix } from '../index.js'

const { DEFAULTS: RETRY_DEFAULTS } = createRequire(import.meta.url)('../lib/retry-options.js')

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const read = (f) => readFileSync(join(root, f), 'utf8')

const camel = (snake) => snake.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
/** `2_000.0` → 2000, `Algorithm::Vegas` → 'vegas'; anything else (Some(…), None) → undefined. */
function rustValue(v) {
  v = v.trim()
  if (/^-?[\d_]+(\.[\d_]+)?$/.test(v)) return Number(v.replace(/_/g, ''))
  const alg = /^Algorithm::(\w+)$/.exec(v)
  return alg ? alg[1].toLowerCase() : undefined
}

/**
 * The retry defaults of engine/src/retry.rs: the budget's (`retryBudget.`) and the policy's
 * (`retry.`, whose times are `N * NANOS_PER_MS` and whose names are the JS options').
 */
function retryDefaults(text = read('engine/src/retry.rs')) {
  const out = {}
  const body = (struct) => {
    const m = new RegExp(`impl Default for ${struct} \\{[\\s\\S]*?${struct} \\{([\\s\\S]*?)\\n\\s*\\}`).exec(text)
    assert.ok(m, `engine/src/retry.rs has impl Default for ${struct}`)
    return [...m[1].matchAll(/^\s*(\w+):\s*([^,\n]+),?\s*$/gm)]
  }
  for (const [, k, v] of body('BudgetOptions')) out[`retryBudget.${camel(k)}`] = rustValue(v)
  const names = { max_attempts: 'attempts', base_ns: 'baseMs', max_delay_ns: 'maxDelayMs', max_retry_after_ns: 'maxRetryAfterMs', jitter: 'backoff' }
  for (const [, k, v] of body('RetryPolicy')) {
    if (!(k in names)) continue
    const ms = /^([\d_]+) \* NANOS_PER_MS$/.exec(v.trim())
    const jitter = /^Jitter::(\w+)$/.exec(v.trim())
    out[`retry.${names[k]}`] = ms ? Number(ms[1].replace(/_/g, '')) : jitter ? jitter[1].toLowerCase() : rustValue(v)
  }
  return out
}

/** The engine's defaults, from the `impl Default for …` bodies of engine/src/options.rs and retry.rs. */
function engineDefaults(text = read('engine/src/options.rs')) {
  const prefixes = { LimiterOptions: '', QueueOptions: 'queue.', BreakerOptions: 'breaker.', RegistryOptions: '', ThrottleOptions: 'throttle.' }
  const out = {}
  for (const [struct, prefix] of Object.entries(prefixes)) {
    const m = new RegExp(`impl Default for ${struct} \\{[\\s\\S]*?${struct} \\{([\\s\\S]*?)\\n\\s*\\}`).exec(text)
    assert.ok(m, `engine/src/options.rs has impl Default for ${struct}`)
    for (const f of m[1].matchAll(/^\s*(\w+):\s*([^,\n]+),?\s*$/gm)) {
      const value = rustValue(f[2])
      if (value !== undefined && f[1] !== 'clock_offset_ns') out[prefix + camel(f[1])] = value
    }
  }
  const w = /pub const DEFAULT_WINDOW_MS: u64 = ([\d_]+);/.exec(read('engine/src/quota.rs'))
  assert.ok(w, 'engine/src/quota.rs states DEFAULT_WINDOW_MS')
  out['quota.windowMs'] = Number(w[1].replace(/_/g, ''))
  const c = /pub const DEFAULT_MAX_COOLDOWN_MS: u64 = ([\d_]+);/.exec(read('engine/src/quota.rs'))
  assert.ok(c, 'engine/src/quota.rs states DEFAULT_MAX_COOLDOWN_MS')
  out['quota.maxCooldownMs'] = Number(c[1].replace(/_/g, ''))
  return { ...out, ...retryDefaults() }
}

/** "Default N" (or "'vegas' (default)") in the `///` docs of the binding's NativeOptions. */
function bindingDefaults(text = read('src/binding/options.rs')) {
  const m = /pub struct NativeOptions \{([\s\S]*?)\n\}/.exec(text)
  assert.ok(m, 'src/binding/options.rs declares NativeOptions')
  const out = {}
  for (const f of m[1].matchAll(/((?:\s*\/\/\/[^\n]*\n)+)\s*pub (\w+):/g)) {
    const doc = f[1]
    const name = camel(f[2]).replace(/^(queue|breaker|bulkhead|retryBudget|throttle)([A-Z])/, (_, p, c) => `${p}.${c.toLowerCase()}`)
    const d = /Default (-?[\d.]+)\b/.exec(doc)
    if (d) out[name] = Number(d[1])
    const s = /'(\w+)' \(default\)/.exec(doc)
    if (s) out[name] = s[1]
  }
  return out
}

/** "Default N" / "Default `'x'`" of every documented property of index.d.ts's option interfaces. */
function dtsDefaults(text = read('index.d.ts')) {
  const ifaces = { ResilixOptions: '', QueueOptions: 'queue.', BreakerOptions: 'breaker.', BulkheadOptions: 'bulkhead.', ThrottleOptions: 'throttle.', RetryOptions: 'retry.', RetryBudgetOptions: 'retryBudget.', QuotaBudget: 'quota.' }
  const out = {}
  for (const [iface, prefix] of Object.entries(ifaces)) {
    const m = new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`).exec(text)
    assert.ok(m, `index.d.ts declares ${iface}`)
    for (const p of m[1].matchAll(/\/\*\*([\s\S]*?)\*\/\s*\n\s*(\w+)\??:/g)) {
      const d = /Default (-?[\d.]+)[ .,;(]/.exec(p[1])
      if (d) out[prefix + p[2]] = Number(d[1])
      const s = /Default `'(\w+)'`/.exec(p[1])
      if (s) out[prefix + p[2]] = s[1]
    }
  }
  return out
}

/** The default column of the README's Options table: numbers (spaces removed) and quoted names. */
function readmeDefaults(text = read('README.md')) {
  const start = text.indexOf('\n## Options\n')
  assert.ok(start >= 0, 'README has an Options section')
  const end = text.indexOf('\n## ', start + 1)
  const out = {}
  for (const line of text.slice(start, end).split('\n')) {
    const cells = line.startsWith('| `') ? line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()) : null
    if (!cells) continue
    const name = cells[0].replace(/`/g, '')
    const n = /^(-?[\d ]+(\.\d+)?)( |\(|$)/.exec(cells[1])
    if (n) out[name] = Number(n[1].replace(/ /g, ''))
    const s = /^`'(\w+)'`$/.exec(cells[1])
    if (s) out[name] = s[1]
  }
  return out
}

test('every option default agrees across the engine, the binding docs, index.d.ts and the README', () => {
  const engine = engineDefaults()
  const sources = { 'src/binding/options.rs': bindingDefaults(), 'index.d.ts': dtsDefaults(), 'README.md': readmeDefaults() }
  // The engine has a default for each of these; every other source must state each one.
  assert.ok(Object.keys(engine).length >= 25, `engine defaults found: ${Object.keys(engine)}`)
  for (const [file, stated] of Object.entries({ 'index.d.ts': sources['index.d.ts'], 'README.md': sources['README.md'] })) {
    const missing = Object.keys(engine).filter((k) => !(k in stated))
    assert.deepEqual(missing, [], `${file} states no default for ${missing}`)
  }
  // The binding documents only some of its fields; what it states must be right.
  assert.ok(Object.keys(sources['src/binding/options.rs']).length >= 15)
  const wrong = []
  for (const [file, stated] of Object.entries(sources)) {
    for (const [name, value] of Object.entries(stated)) {
      if (!(name in engine)) wrong.push(`${file}: ${name} = ${value}, but the engine has no default for it`)
      else if (engine[name] !== value) wrong.push(`${file}: ${name} = ${value}, the engine's default is ${engine[name]}`)
    }
  }
  assert.deepEqual(wrong, [])
})

test("the retry policy the JS layer runs has the engine's defaults", () => {
  const engine = retryDefaults()
  for (const k of ['attempts', 'baseMs', 'maxDelayMs', 'maxRetryAfterMs', 'backoff']) {
    assert.equal(RETRY_DEFAULTS[k], engine[`retry.${k}`], `retry.${k}`)
  }
  assert.deepEqual([...RETRY_DEFAULTS.retryOn], ['failure', 'overload', 'timeout'])
})

test('the built addon runs with the engine defaults the sources state', async () => {
  const engine = engineDefaults()
  const rx = new Resilix()
  try {
    await rx.execute(async () => 1, { key: 'k' })
    const s = rx.stats('k')
    assert.equal(s.limit, engine.initialLimit, 'a new key starts at initialLimit')
    assert.equal(s.algorithm, engine.algorithm)
    assert.equal(s.breaker, 'closed')
    // maxKeyLength: a key of exactly that many UTF-8 bytes is accepted, one more byte is not.
    await rx.execute(async () => 1, { key: 'x'.repeat(engine.maxKeyLength) })
    await assert.rejects(rx.execute(async () => 1, { key: 'x'.repeat(engine.maxKeyLength + 1) }), RangeError)
    // maxKeys: one key past it evicts one idle key.
    for (let i = 0; i < engine.maxKeys + 1; i++) await rx.execute(async () => 1, { key: `key-${i}` })
    assert.equal(rx.keys().length, engine.maxKeys)
  } finally {
    rx.close()
  }
})

test('the interceptor default bodyTimeoutMs agrees across lib/interceptor/options.js, undici.d.ts and the README', () => {
  const code = /const BODY_TIMEOUT_MS = ([\d_]+)/.exec(read('lib/interceptor/options.js'))
  assert.ok(code, 'lib/interceptor/options.js defines BODY_TIMEOUT_MS')
  const value = Number(code[1].replace(/_/g, ''))
  const docs = [...read('undici.d.ts').matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*\n\s*(\w+)\??:/g)]
  const doc = docs.find((d) => d[2] === 'bodyTimeoutMs')
  const dts = doc && /Default (\d+)/.exec(doc[1])
  assert.ok(dts, 'undici.d.ts states a default for bodyTimeoutMs')
  assert.equal(Number(dts[1]), value)
  const row = read('README.md').split('\n').find((l) => l.startsWith('| `bodyTimeoutMs` |'))
  assert.ok(row, 'README has a bodyTimeoutMs row')
  assert.equal(Number(row.split('|')[2].replace(/\s/g, '')), value)
})

test("the interceptor's default mark (the first chunk of an event stream) names the same content types in lib/interceptor/options.js, undici.d.ts and the README", async () => {
  const { STREAM_TYPES } = await import('../lib/interceptor/options.js')
  const types = [...STREAM_TYPES]
  assert.ok(types.includes('text/event-stream'))
  const doc = [...read('undici.d.ts').matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*\n\s*(\w+)\??:/g)].find((d) => d[2] === 'mark')
  assert.ok(doc, 'undici.d.ts documents mark')
  const named = (text) => [...text.matchAll(/`([a-z]+\/[\w.+-]+)`/g)].map((m) => m[1]).sort()
  assert.deepEqual(named(/Default:[^.]*/.exec(doc[1].replace(/\s*\*\s*/g, ' '))[0]), types.slice().sort())
  const row = read('README.md').split('\n').find((l) => l.startsWith('| `mark` |'))
  assert.ok(row, 'README has a mark row')
  assert.deepEqual(named(row.split('|')[2]), types.slice().sort())
})
