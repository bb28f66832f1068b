'use strict'
// Per-call events on node:diagnostics_channel (ADR 0007). Nothing is timed or published unless
// someone subscribes: a call then pays a subscriber check when it is admitted, and a guarded
// call a null check when it ends. Times are the engine's clock (ms), the one its latency samples use.

const dc = require('node:diagnostics_channel')
const { native, clockCell, CELL } = require('./native')
/** The clock cell's elements this file reads (ADR 1210). */
const NOW = CELL.now
const STALLED_FROM = CELL.stalledFrom
const { NAMES, REJECTED, CANCELLED } = require('./verdicts')
const { TimeoutError } = require('./errors')

/** The channels, by the names users subscribe to. */
const CHANNELS = {
  /** A call that ran (or a permit) was settled: `{ rx, key, verdict, latencyMs, durationMs, waitMs, stuck }`. */
  settle: 'resilix:call:settle',
  /** One of our policies refused a call, which never ran: `{ rx, key, reason }`. */
  reject: 'resilix:call:reject',
  /** A call left the queue before it ran: `{ rx, key, reason: 'timeout' | 'abort' | 'close', waitMs }`. */
  leave: 'resilix:call:leave',
  /** A call's next attempt starts after `delayMs`: `{ rx, key, attempt, delayMs, reason }` (attempt 2 is the first retry). */
  retry: 'resilix:call:retry',
  /** A call starts waiting for its quota's budget: `{ rx, key }`. */
  quotaWait: 'resilix:quota:wait',
  /** A call stops waiting for budget: `{ rx, key, waitMs, outcome: 'granted' | 'refused' | 'left' }`. */
  quotaResume: 'resilix:quota:resume',
  /** A key's shared quota store changed state: `{ rx, key, state: 'leased' | 'fallback' | 'refusing', error? }`. */
  store: 'resilix:quota:store',
}

const settleChannel = dc.channel(CHANNELS.settle)
const rejectChannel = dc.channel(CHANNELS.reject)
const leaveChannel = dc.channel(CHANNELS.leave)
const retryChannel = dc.channel(CHANNELS.retry)
const quotaWaitChannel = dc.channel(CHANNELS.quotaWait)
const quotaResumeChannel = dc.channel(CHANNELS.quotaResume)
const storeChannel = dc.channel(CHANNELS.store)

/** When a call was admitted, started running (left the queue) and marked: engine clock, ms. */
class Timing {
  constructor(t) {
    this.admitted = t
    this.started = t
    this.marked = -1
  }
}

/**
 * Someone listens to settles or leaves: calls are timed. A call admitted then is a GuardedCall
 * (lib/call-record.js), whose `_timing` field holds its Timing; a plain call has no such field (one
 * more field on every call cost throughput with 100 concurrent callers, ADR 0007).
 */
const active = () => settleChannel.hasSubscribers || leaveChannel.hasSubscribers

/** A Timing from the acquire just made (the clock cell holds its time), or null when nobody listens. */
const timing = () => (active() ? new Timing(clockCell[NOW]) : null)

/** A waiting call starts running now. */
function started(t) {
  t.started = native.nowMs()
}

/** A call marks: its first mark counts. */
function marked(t) {
  if (t.marked < 0) t.marked = native.nowMs()
}

/** A permit timed by `t` was settled with verdict `code`; `stuck`: released as stuck (ADR 0602). */
function settled(rx, key, code, t, stuck) {
  if (!settleChannel.hasSubscribers) return
  const now = native.nowMs()
  // The binding's rule, from this reading: settled during a stall, no observation (ADR 0610).
  if (!stuck && code !== REJECTED && now >= clockCell[STALLED_FROM]) code = CANCELLED
  settleChannel.publish({
    rx,
    key,
    verdict: NAMES[code],
    latencyMs: (t.marked >= 0 ? t.marked : now) - t.started,
    durationMs: now - t.started,
    waitMs: t.started - t.admitted,
    stuck,
  })
}

/** A refusal by one of our policies. */
function rejected(rx, key, reason) {
  if (rejectChannel.hasSubscribers) rejectChannel.publish({ rx, key, reason })
}

/** A waiting call gave up with `err`: its deadline, its caller's signal, or close(). */
function left(rx, key, err, t) {
  if (!leaveChannel.hasSubscribers) return
  let reason = 'abort'
  try {
    // Ours (a fresh TimeoutError, or close()'s error), else the caller's abort reason, any value.
    if (err instanceof TimeoutError) reason = 'timeout'
    else if (err instanceof Error && err.code === 'ERR_RESILIX_CLOSED') reason = 'close'
  } catch {}
  leaveChannel.publish({ rx, key, reason, waitMs: native.nowMs() - t.admitted })
}

/** A retrying call starts attempt `attempt` after `delayMs`; `reason()`: the retried verdict's name. */
function retried(rx, key, attempt, delayMs, reason) {
  if (retryChannel.hasSubscribers) retryChannel.publish({ rx, key, attempt, delayMs, reason: reason() })
}

/** When each call waiting for budget began, kept only while someone listens to its end. */
const waitingSince = new WeakMap()

/** `call` starts waiting for budget (lib/line.js). */
function quotaWaiting(call) {
  if (quotaResumeChannel.hasSubscribers) waitingSince.set(call, native.nowMs())
  if (quotaWaitChannel.hasSubscribers) quotaWaitChannel.publish({ rx: call._rx, key: call._ks.name })
}

/** `call` stops waiting for budget: 'granted', 'refused', or 'left' (deadline, abort, close). */
function quotaResumed(call, outcome) {
  const since = waitingSince.get(call)
  if (since !== undefined) waitingSince.delete(call)
  if (!quotaResumeChannel.hasSubscribers) return
  quotaResumeChannel.publish({ rx: call._rx, key: call._ks.name, waitMs: since === undefined ? null : native.nowMs() - since, outcome })
}

/** A key's quota store changed state (lib/fleet.js). */
function storeChanged(rx, key, state, err) {
  if (storeChannel.hasSubscribers) storeChannel.publish(err === null ? { rx, key, state } : { rx, key, state, error: err.message })
}

module.exports = { CHANNELS, active, timing, started, marked, settled, rejected, left, retried, quotaWaiting, quotaResumed, storeChanged }
