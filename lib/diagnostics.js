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
}

const settleChannel = dc.channel(CHANNELS.settle)
const rejectChannel = dc.channel(CHANNELS.reject)
const leaveChannel = dc.channel(CHANNELS.leave)

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
 * (lib/call.js), whose `_timing` field holds its Timing; a plain call has no such field (one
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

module.exports = { CHANNELS, active, timing, started, marked, settled, rejected, left }
