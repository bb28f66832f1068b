'use strict'
// Request bodies a retry can send again (ADR 0811). A string, bytes, a Blob or FormData (undici
// reads those afresh at each dispatch) is sent again as it is. A stream or an async iterable,
// which is what fetch hands the dispatcher for every body, is read into memory before the first
// attempt when its content-length is known and at most the bound; anything else is sent once.

const AS_IS = 0 // sent again as it is
const READ = 1 // read into memory first
const ONCE = 2 // sent once

/**
 * How a retry can send `body` again: AS_IS, READ (a stream whose `headers` declare at most `max`
 * bytes) or ONCE. Total: a body whose properties throw is sent once, undici judges it.
 */
function replayPlan(body, headers, max) {
  try {
    if (replayable(body)) return AS_IS
    if (!readable(body)) return ONCE
    const n = declaredLength(headers)
    return n !== undefined && n <= max ? READ : ONCE
  } catch {
    return ONCE
  }
}

/** Bodies undici reads afresh at every dispatch. */
function replayable(b) {
  if (b === undefined || b === null || typeof b === 'string') return true
  if (b instanceof Uint8Array || b instanceof ArrayBuffer || ArrayBuffer.isView(b) || Array.isArray(b)) return true
  return isBlobLike(b) || isFormDataLike(b)
}

/** undici's own test: a Blob or File, of this realm or another. */
function isBlobLike(b) {
  return (typeof Blob === 'function' && b instanceof Blob) || (typeof b.stream === 'function' && /^(Blob|File)$/.test(b[Symbol.toStringTag]))
}

function isFormDataLike(b) {
  return b[Symbol.toStringTag] === 'FormData' && typeof b.append === 'function' && typeof b.getAll === 'function'
}

/** A body read chunk by chunk: a Node stream, an async iterable or another iterable. */
function readable(b) {
  return typeof b === 'object' && (typeof b[Symbol.asyncIterator] === 'function' || typeof b[Symbol.iterator] === 'function')
}

/**
 * The content-length the request declares (a header object or undici's flat array of names and
 * values), or undefined when none or not one number. Other header iterables are not read: a
 * one-shot iterator read here would be empty for undici.
 */
function declaredLength(headers) {
  let v
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i++) {
      const h = headers[i]
      if (Array.isArray(h)) {
        if (String(h[0]).toLowerCase() === 'content-length') v = h[1]
      } else if (i % 2 === 0 && String(h).toLowerCase() === 'content-length') v = headers[i + 1]
    }
  } else if (headers !== null && typeof headers === 'object' && typeof headers[Symbol.iterator] !== 'function') {
    for (const k of Object.keys(headers)) if (k.toLowerCase() === 'content-length') v = headers[k]
  }
  if (Array.isArray(v)) v = v.length === 1 ? v[0] : undefined
  if (typeof v === 'number') v = String(v)
  if (typeof v !== 'string' || !/^\s*\d+\s*$/.test(v)) return undefined
  return Number(v)
}

/**
 * Reads `body` into one Buffer, at most `max` bytes; `signal` stops it. Resolves
 * `{ bytes }` with the whole body, or `{ rest }` when it turned out longer than `max` or
 * yielded something other than bytes or text: an iterable of what was read and what is left,
 * to be sent once.
 */
async function collect(body, max, signal) {
  const it = typeof body[Symbol.asyncIterator] === 'function' ? body[Symbol.asyncIterator]() : body[Symbol.iterator]()
  const stop = () => {
    if (typeof body.destroy === 'function') body.destroy(signal.reason)
    else Promise.resolve(it.return?.()).catch(() => {})
  }
  signal.addEventListener('abort', stop, { once: true })
  const chunks = []
  let size = 0
  try {
    for (;;) {
      const r = await it.next()
      if (signal.aborted) return null
      if (r.done) return { bytes: Buffer.concat(chunks, size) }
      let c = r.value
      if (typeof c === 'string') c = Buffer.from(c)
      if (!(c instanceof Uint8Array) || size + c.length > max) {
        chunks.push(r.value)
        return { rest: rest(chunks, it) }
      }
      chunks.push(c)
      size += c.length
    }
  } finally {
    signal.removeEventListener('abort', stop)
  }
}

/** What was read, then the rest of the iterator (closed if the dispatcher stops early). */
async function* rest(chunks, it) {
  let done = false
  try {
    yield* chunks
    for (;;) {
      const r = await it.next()
      if ((done = r.done)) return
      yield r.value
    }
  } finally {
    if (!done) await it.return?.()
  }
}

module.exports = { replayPlan, AS_IS, READ, collect }
