'use strict'
// The interceptor's options, checked once when it is built (TypeError / RangeError naming the
// option, as the constructor does). Defaults and their provenance: ADR 0801.

const { timeoutOption, describe } = require('../describe')
const { isResilix } = require('../options')
const { didYouMean } = require('../suggest')
const { isUrl } = require('../keys')

const { callRetry } = require('../retry-options')
const { priorityOption, tenantOption } = require('../levels')

const KNOWN = new Set(['key', 'timeoutMs', 'bodyTimeoutMs', 'classify', 'mark', 'retry', 'retryMethods', 'replayBodyBytes', 'priority', 'tenant', 'cost', 'usage', 'pace'])

/**
 * The most body a `usage` function is shown of a response that is not an event stream: a
 * guess, far above an LLM API's JSON answer (kilobytes), small enough to hold per request.
 */
const USAGE_BODY_BYTES = 1 << 20

/**
 * The largest stream body (fetch hands every body over as one) read into memory so that a retry
 * can send it again; a larger one, or one of unknown size, is sent once (ADR 0811).
 */
const REPLAY_BODY_BYTES = 1 << 20

/** The methods RFC 9110 defines as idempotent: the only ones retried unless told otherwise. */
const IDEMPOTENT = ['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']

/**
 * How long a response body may go without delivering a chunk before it is aborted and its slot
 * freed (ADR 0801): nginx's `proxy_read_timeout` default, the idle bound between two reads that
 * most HTTP stacks already live behind. A guess for this use, not measured.
 */
const BODY_TIMEOUT_MS = 60_000

/**
 * Responses marked at their first body chunk by default (ADR 0809): a server streaming events
 * or JSON lines sends its headers at once and its first event when the upstream produced it,
 * so the headers time nothing. Server-sent events (OpenAI, Anthropic, vLLM) and NDJSON (Ollama).
 */
const STREAM_TYPES = new Set(['text/event-stream', 'application/x-ndjson'])

const HEADERS = 'headers'
const FIRST_CHUNK = 'firstChunk'

/** The default `mark`: the first chunk for a streaming content type, else the headers. */
function markByContentType(statusCode, headers) {
  let type = headers?.['content-type']
  if (Array.isArray(type)) type = type[0]
  if (typeof type !== 'string') return HEADERS
  const semi = type.indexOf(';')
  return STREAM_TYPES.has((semi < 0 ? type : type.slice(0, semi)).trim().toLowerCase()) ? FIRST_CHUNK : HEADERS
}

// Normalised origins by the string undici was given (`new URL()` costs about a microsecond).
// Bounded: cleared when full, so that invented origins cannot grow it.
const origins = new Map()
const MAX_ORIGINS = 1024

function originKey(opts) {
  const o = opts.origin
  if (typeof o === 'string') {
    let k = origins.get(o)
    if (k === undefined) {
      try {
        k = new URL(o).origin
      } catch {
        k = o // not a URL: the dispatcher refuses it with its own error
      }
      if (origins.size >= MAX_ORIGINS) origins.clear()
      origins.set(o, k)
    }
    return k
  }
  if (o !== null && typeof o === 'object' && typeof o.origin === 'string') return o.origin // a URL
  throw new TypeError(
    'resilix/undici: the request has no origin to key it by (a Pool or Client dispatches without one): ' +
      "give the interceptor a key, e.g. interceptor(rx, { key: 'payments' })",
  )
}

/**
 * `markAt(statusCode, headers)` for the `mark` option: `'headers'` or `'firstChunk'`; a
 * function's answer is checked on every response (a bad one fails that request).
 */
function markOption(mark) {
  if (mark === undefined) return markByContentType
  if (mark === HEADERS || mark === FIRST_CHUNK) return () => mark
  if (typeof mark === 'function') {
    return (statusCode, headers) => {
      const at = mark({ statusCode, headers })
      if (at === HEADERS || at === FIRST_CHUNK) return at
      throw new TypeError(`resilix/undici: the mark function returned ${describe(at)}; expected 'headers' or 'firstChunk'`)
    }
  }
  throw new TypeError(
    `resilix/undici: option mark must be 'headers', 'firstChunk' or a function ({ statusCode, headers }) => 'headers' | 'firstChunk', got ${describe(mark)}`,
  )
}

/**
 * Validates the interceptor's arguments and returns the settings every request reads:
 * `{ rx, keyOf, timeoutMs, bodyTimeoutMs, classify, markAt, retry, retryMethods, priorityOf, tenantOf }`.
 */
function interceptorSettings(rx, options) {
  if (!isResilix(rx)) {
    throw new TypeError(`resilix/undici: interceptor(rx, options) expects a Resilix instance as rx, got ${describe(rx)}`)
  }
  if (options === undefined) options = {}
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`resilix/undici: interceptor options must be an object, got ${describe(options)}`)
  }
  for (const k of Object.keys(options)) {
    if (!KNOWN.has(k)) throw new TypeError(`resilix/undici: unknown interceptor option ${k}${didYouMean(k, KNOWN, 'interceptor')}`)
  }

  let keyOf = originKey
  const key = options.key
  if (typeof key === 'string') {
    if (key === '') {
      throw new RangeError("resilix/undici: option key must not be empty: name the upstream, or leave it out to key by the request's origin")
    }
    keyOf = () => key
  } else if (typeof key === 'function') {
    keyOf = (opts) => {
      const k = key(opts)
      if (typeof k !== 'string') throw new TypeError(`resilix/undici: the key function returned ${describe(k)}; expected a string`)
      return k
    }
  } else if (key !== undefined) {
    const got = isUrl(key) ? `a URL object: use url.origin ("${key.origin}"), or leave key out (the request's origin is the default)` : describe(key)
    throw new TypeError(`resilix/undici: option key must be a string or a function (dispatch options) => string, got ${got}`)
  }

  const classify = options.classify
  if (classify !== undefined && typeof classify !== 'function') {
    throw new TypeError(`resilix/undici: option classify must be a function, got ${describe(classify)}`)
  }

  // The instance's default deadline applies unless the interceptor sets its own, as for execute().
  const timeoutMs =
    options.timeoutMs !== undefined ? timeoutOption('timeoutMs', options.timeoutMs) : rx._timeoutMs
  const bodyTimeoutMs =
    options.bodyTimeoutMs !== undefined ? timeoutOption('bodyTimeoutMs', options.bodyTimeoutMs) : BODY_TIMEOUT_MS

  const markAt = markOption(options.mark)

  // As for execute(): the instance's retry policy unless the interceptor sets its own.
  const retry = options.retry === undefined ? rx._retry : callRetry(options.retry, rx._retry, 'interceptor option retry')
  let retryMethods = IDEMPOTENT
  if (options.retryMethods !== undefined) {
    const m = options.retryMethods
    if (!Array.isArray(m) || !m.every((x) => typeof x === 'string' && x.length > 0)) {
      throw new TypeError(`resilix/undici: option retryMethods must be an array of HTTP method names, got ${describe(m)}`)
    }
    retryMethods = m.map((x) => x.toUpperCase())
  }
  const replayBodyBytes = options.replayBodyBytes === undefined ? REPLAY_BODY_BYTES : bytesOption('replayBodyBytes', options.replayBodyBytes)

  const priorityOf = perRequest(options.priority, 'priority', priorityOption)
  const tenantOf = perRequest(options.tenant, 'tenant', tenantOption)

  const q = quotaSettings(rx, options)
  return { rx, keyOf, timeoutMs, bodyTimeoutMs, classify, markAt, retry, retryMethods: new Set(retryMethods), replayBodyBytes, priorityOf, tenantOf, ...q }
}

/** A size in bytes: an integer from 0 (0: never read a stream body to send it again). */
function bytesOption(name, v) {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new TypeError(`resilix/undici: option ${name} must be a whole number of bytes, 0 or more, got ${describe(v)}`)
  }
  return v
}

/**
 * With a quota (ADR 1100): `costOf(opts)`, a request's estimate; `usageOf(text)`, its usage
 * from a body or an event; `pace`, read the rate-limit headers (default true). Each needs an
 * instance with a quota.
 */
function quotaSettings(rx, options) {
  const { cost, usage, pace } = options
  if (rx._quota === null && (cost !== undefined || usage !== undefined || pace !== undefined)) {
    const which = cost !== undefined ? 'cost' : usage !== undefined ? 'usage' : 'pace'
    throw new TypeError(`resilix/undici: option ${which} needs an instance with a quota, e.g. new Resilix({ quota: { requests: 500, tokens: 200000 } })`)
  }
  let costOf = null
  if (typeof cost === 'function') costOf = cost
  else if (cost !== undefined && cost !== null && typeof cost === 'object') costOf = () => cost
  else if (cost !== undefined) {
    throw new TypeError(`resilix/undici: option cost must be an object such as { tokens: 1000 } or a function (dispatch options) => cost, got ${describe(cost)}`)
  }
  let usageOf = null
  let usageDone = identity
  if (typeof usage === 'function') usageOf = usage
  else if (usage === 'openai' || usage === 'anthropic') {
    usageOf = usage === 'openai' ? openaiUsage : anthropicUsage
    usageDone = asCosts(rx._quota)
  }
  else if (usage !== undefined) {
    throw new TypeError(`resilix/undici: option usage must be 'openai', 'anthropic' or a function (text) => usage | undefined, got ${describe(usage)}`)
  }
  if (pace !== undefined && typeof pace !== 'boolean') throw new TypeError(`resilix/undici: option pace must be a boolean, got ${describe(pace)}`)
  return { costOf, usageOf, usageDone, pace: rx._quota !== null && pace !== false }
}

const identity = (u) => u

/** The `usage` object of a body or an event, or undefined. */
function usageIn(text) {
  if (!text.includes('"usage"')) return undefined
  try {
    const o = JSON.parse(text)
    const u = o.usage ?? o.message?.usage // Anthropic's message_start nests it
    return u !== null && typeof u === 'object' ? u : undefined
  } catch {
    return undefined
  }
}

/** OpenAI's usage (a body, or the last event of a stream with include_usage). */
function openaiUsage(text) {
  const u = usageIn(text)
  if (u === undefined) return undefined
  const r = {}
  if (typeof u.prompt_tokens === 'number') r.input = u.prompt_tokens
  if (typeof u.completion_tokens === 'number') r.output = u.completion_tokens
  return r
}

/** Anthropic's usage: input tokens in message_start, output tokens in message_delta. */
function anthropicUsage(text) {
  const u = usageIn(text)
  if (u === undefined) return undefined
  const r = {}
  if (typeof u.input_tokens === 'number') r.input = u.input_tokens
  if (typeof u.output_tokens === 'number') r.output = u.output_tokens
  return r
}

/** A family's usage as the costs the quota names: tokens (in + out), inputTokens, outputTokens. */
function asCosts(quota) {
  const names = new Set(quota.names)
  return (u) => {
    const out = {}
    if (names.has('inputTokens') && u.input !== undefined) out.inputTokens = u.input
    if (names.has('outputTokens') && u.output !== undefined) out.outputTokens = u.output
    if (names.has('tokens') && (u.input !== undefined || u.output !== undefined)) out.tokens = (u.input ?? 0) + (u.output ?? 0)
    return out
  }
}

/**
 * A `priority` or `tenant` option: a value, or a function of the dispatch options whose result
 * is checked per request (undefined: none for that request). null when the option is unset.
 */
function perRequest(v, name, check) {
  if (v === undefined) return null
  if (typeof v === 'function') {
    return (opts) => {
      const x = v(opts)
      if (x !== undefined) check(x, `resilix/undici: the ${name} function's result`)
      return x
    }
  }
  check(v, `resilix/undici: option ${name}`)
  return () => v
}

module.exports = { interceptorSettings, USAGE_BODY_BYTES, REPLAY_BODY_BYTES, BODY_TIMEOUT_MS, STREAM_TYPES, HEADERS, FIRST_CHUNK, IDEMPOTENT }
