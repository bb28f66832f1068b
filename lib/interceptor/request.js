'use strict'
// One request through the interceptor (ADR 0800). It waits for a permit (`rx.acquire`), then
// goes to the next dispatcher; the latency is marked at the response headers or at the first
// body chunk (`mark`, ADR 0809) and the permit is released when the body ends, errors or is
// aborted. Two faces: the caller's handler talks to its `Controller`; the next dispatcher calls
// this object's handler methods.
//
// Deadlines (ADR 0801): `timeoutMs` runs from dispatch to the mark (queue wait included); after
// the headers, `bodyTimeoutMs` bounds the time between two body chunks, paused or not, so a body
// nobody reads cannot hold its slot.

const { TimeoutError } = require('../errors')
const V = require('../verdicts')
const { describe } = require('../describe')
const { decide, retryAfterError, RETRY_AFTER_REFUSED, THROTTLE_REFUSED, REJECTED_THROTTLE } = require('../retry')
const { native, PRIORITIES } = require('../native')
const { retryAfterOf } = require('../retry-after')
const { closedError } = require('../lifetime')
const { delayMs } = require('../timers')
const { FIRST_CHUNK, USAGE_BODY_BYTES } = require('./options')
const { replayPlan, AS_IS, READ, collect } = require('./body')
const quota = require('../quota')

const WAITING = 0 // for a permit
const SENT = 1 // dispatched, no final response headers yet
const BODY = 2 // final headers arrived, body flowing
const DONE = 3 // the caller has had its last callback
const BACKOFF = 4 // between two attempts (retry): no permit held, nothing dispatched
const READING = 5 // reading a stream body into memory so that a retry can send it again

const now = () => performance.now()

// undici's errors that say nothing about the upstream: bad request options, and a dispatcher
// closed or destroyed by its owner. No observation (ADR 0800).
const LOCAL_ERRORS = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_CLOSED', 'UND_ERR_DESTROYED'])

class Controller {
  constructor(req) {
    this._req = req
    this._paused = false
    this._aborted = false
    this._reason = null
  }

  get aborted() {
    return this._aborted
  }

  get paused() {
    return this._paused
  }

  get reason() {
    return this._reason
  }

  get rawHeaders() {
    return this._req.down?.rawHeaders
  }

  get rawTrailers() {
    return this._req.down?.rawTrailers
  }

  pause() {
    this._paused = true
    if (this._req.state !== DONE) this._req.down?.pause()
  }

  resume() {
    if (!this._paused) return
    this._paused = false
    if (this._req.state !== DONE) this._req.down?.resume()
  }

  abort(reason) {
    if (this._aborted) return
    this._aborted = true
    if (reason === undefined || reason === null) {
      reason = new Error('resilix/undici: request aborted')
      reason.name = 'AbortError'
    }
    this._reason = reason
    this._req.callerAborted(reason)
  }
}

class ResilientRequest {
  constructor(settings, dispatch, opts, handler) {
    this.s = settings
    this.dispatch = dispatch
    this.opts = opts
    this.handler = handler
    this.controller = new Controller(this)
    this.key = undefined
    this.state = WAITING
    this.down = null // the next dispatcher's controller, from its onRequestStart
    this.wait = null // aborts the permit wait
    this.permit = null
    this.released = false
    this.verdict = 'success' // from the final response's status
    this.outcome = undefined // what the latest verdict was read from (a response's status and headers, or an error)
    this.ks = null // the key's state, held between two attempts for the throttle's pass (ADR 1004)
    this.endVerdict = undefined // set when we or the caller abort: the verdict that abort settles with
    this.endReason = undefined
    this.timer = null
    this.t0 = now()
    this.lastData = 0
    this.classifyError = undefined
    // Retry (ADR 0903): the policy when this request may be retried, else null.
    this.policy = null
    this.unreplayable = null // the policy a request whose body cannot be sent again would have had
    this.attempts = 0
    this.gen = 0 // bumped when an attempt is abandoned: its callbacks are stale from then on
    this.delay = 0
    this.overall = true // the running attempt's timer is the request's own deadline
    this.backoff = null
    this.markPending = false // marking at the first body chunk, which has not come yet
    this.priority = undefined
    this.tenant = undefined
    this.cost = undefined // with a quota: the estimate of every attempt
    this.usage = null // with a usage reader: what the body said so far (UsageScan)
    this.reader = null // while the body is read: what close() aborts
  }

  start() {
    try {
      this.key = this.s.keyOf(this.opts)
      // Read once: every attempt of the request has the same priority and tenant.
      if (this.s.priorityOf !== null) this.priority = this.s.priorityOf(this.opts)
      if (this.s.tenantOf !== null) this.tenant = this.s.tenantOf(this.opts)
      if (this.s.costOf !== null) this.cost = this.s.costOf(this.opts)
    } catch (err) {
      this.state = DONE
      deliverError(this, err)
      return
    }
    // Started at once, so that the caller can abort while the request waits for a permit.
    try {
      this.handler.onRequestStart?.(this.controller, undefined)
    } catch (err) {
      if (this.state !== DONE) {
        this.state = DONE
        deliverError(this, err)
      }
      return
    }
    if (this.state === DONE) return // aborted inside onRequestStart
    const policy = this.s.retry === null ? null : retryPolicy(this.s, this.opts, this.handler)
    if (policy !== null) {
      const plan = replayPlan(this.opts.body, this.opts.headers, this.s.replayBodyBytes)
      if (plan === AS_IS) this.retryWith(policy, this.opts.body)
      else if (plan === READ) {
        this.readBody(policy)
        return
      } else this.unreplayable = policy // too large, or of unknown size: sent once (ADR 0811)
    }
    this.acquire(this.s.timeoutMs)
  }

  retryWith(policy, body) {
    this.policy = policy
    // An undici retry interceptor composed inside this one must not retry too (ADR 0903).
    this.opts = { ...this.opts, body, retryOptions: { ...this.opts.retryOptions, maxRetries: 0 } }
  }

  /** Reads a stream body of known, bounded size into memory before the first attempt (ADR 0811). */
  readBody(policy) {
    this.state = READING
    this.wait = new AbortController()
    // close() ends the read, as it ends a backoff.
    this.reader = { abort: () => this.stopReading(closedError('a request reading its body')) }
    this.s.rx._backoffs.add(this.reader)
    if (this.s.timeoutMs !== undefined) {
      this.timer = setTimeout(onTimer, Math.max(1, this.s.timeoutMs), this)
      this.timer.unref()
    }
    collect(this.opts.body, this.s.replayBodyBytes, this.wait.signal).then(
      (r) => {
        if (!this.readEnded()) return
        this.state = WAITING
        if (r.bytes !== undefined) this.retryWith(policy, r.bytes)
        else {
          this.unreplayable = policy // longer than it said, or not bytes: sent once
          this.opts = { ...this.opts, body: r.rest }
        }
        const left = this.timeLeft()
        if (left !== null) this.acquire(left)
      },
      (err) => {
        if (!this.readEnded()) return
        this.state = DONE
        deliverError(this, err) // the body's own error: nothing was sent
      },
    )
  }

  /** The read finished by itself: false when the caller, the deadline or close() ended it first. */
  readEnded() {
    if (this.state !== READING) return false
    this.clearTimer()
    this.s.rx._backoffs.delete(this.reader)
    this.reader = null
    this.wait = null
    return true
  }

  /** Ends the read with `err` (the caller's abort, the deadline, close()); the body is destroyed. */
  stopReading(err) {
    if (this.state !== READING) return
    const wait = this.wait
    this.readEnded()
    this.state = DONE
    wait.abort(err)
    deliverError(this, err)
  }

  acquire(timeoutMs) {
    this.wait = new AbortController()
    let waiting
    try {
      // acquire() of the key (a string), told which retry this is when refused (ADR 1004).
      const attempt = this.attempts === 0 ? 0 : this.attempts + 1
      waiting = this.s.rx._admit(null, this.key, { timeoutMs, signal: this.wait.signal, priority: this.priority, tenant: this.tenant, cost: this.cost }, false, attempt)
    } catch (err) {
      this.refused(err) // acquire answers with a rejected promise; a throw is treated alike
      return
    }
    waiting.then(
      (permit) => this.granted(permit),
      (err) => this.refused(err),
    )
  }

  granted(permit) {
    if (this.state === DONE) {
      permit.release('rejected') // the caller gave up as the permit came: nothing was sent
      return
    }
    this.permit = permit
    this.released = false
    this.wait = null
    this.state = SENT
    this.attempts++
    let ms = this.s.timeoutMs === undefined ? undefined : this.s.timeoutMs - (now() - this.t0)
    this.overall = true
    const per = this.policy?.attemptTimeoutMs
    if (per !== undefined && (ms === undefined || per < ms)) {
      ms = per
      this.overall = false
    }
    if (ms !== undefined) {
      this.timer = setTimeout(onTimer, delayMs(ms, 1), this)
      this.timer.unref()
    }
    try {
      // A retried request's attempts each get their own handler: callbacks of an abandoned
      // attempt are told apart and dropped.
      this.dispatch(this.opts, this.policy === null ? this : new Attempt(this))
    } catch (err) {
      this.endVerdict = 'rejected' // refused before anything was sent
      this.onResponseError(null, err)
    }
  }

  refused(err) {
    if (this.state === DONE) return // the caller aborted: it has its answer
    this.state = DONE
    deliverError(this, err) // RejectedError, TimeoutError (queued), or a bad key's error
  }

  // ---- the next dispatcher's handler ---------------------------------------------------------

  onRequestStart(controller) {
    this.down = controller
    // Aborted while the request sat in the dispatcher's own queue: stop it before it is sent.
    if (this.endReason !== undefined) controller.abort(this.endReason)
    else if (this.controller._paused) controller.pause()
  }

  onResponseStarted() {
    if (this.state === SENT) this.handler.onResponseStarted?.()
  }

  onRequestUpgrade(controller, statusCode, headers, socket) {
    if (this.state !== SENT) return
    this.clearTimer()
    this.permit.mark()
    this.state = DONE
    this.settle(this.responseVerdict(statusCode, headers))
    this.handler.onRequestUpgrade?.(this.controller, statusCode, headers, socket)
  }

  onResponseStart(controller, statusCode, headers, statusMessage) {
    if (this.state !== SENT) return
    if (statusCode >= 200) {
      this.clearTimer()
      // The upstream's word on its budget, before a retry decides anything (ADR 1101).
      if (this.s.pace && this.permit._cost !== null) quota.observeHeaders(this.permit._ks, this.permit._cost, statusCode, headers)
      let markAt
      try {
        markAt = this.s.markAt(statusCode, headers)
      } catch (err) {
        markAt = undefined
        if (this.classifyError === undefined) this.classifyError = err
      }
      if (markAt !== FIRST_CHUNK) this.permit.mark()
      const verdict = this.responseVerdict(statusCode, headers)
      if (this.classifyError !== undefined) {
        this.abortWith(this.classifyError, verdict)
        return
      }
      if (this.policy !== null && this.retried(verdict, { headers })) return
      if (this.unreplayable !== null) this.unreplayed(verdict)
      this.verdict = verdict
      this.state = BODY
      this.markPending = markAt === FIRST_CHUNK
      if (this.s.usageOf !== null && statusCode < 300) this.usage = new UsageScan(headers)
      this.lastData = now()
      this.armBodyTimer()
    }
    return this.handler.onResponseStart?.(this.controller, statusCode, headers, statusMessage)
  }

  onResponseData(controller, chunk) {
    if (this.state !== BODY) return
    this.lastData = now()
    if (this.markPending) {
      this.markPending = false
      this.permit.mark()
    }
    if (this.usage !== null) this.usage.add(chunk, this)
    return this.handler.onResponseData?.(this.controller, chunk)
  }

  onResponseEnd(controller, trailers) {
    if (this.state === DONE) return
    this.clearTimer()
    this.state = DONE
    if (this.usage !== null) this.usage.end(this)
    this.settle(this.verdict) // before the caller hears of it: its next call finds the slot free
    this.handler.onResponseEnd?.(this.controller, trailers)
  }

  onResponseError(controller, err) {
    if (this.state === DONE) {
      // The end of a dispatch we aborted after answering the caller (a deadline, or a request
      // still in the dispatcher's queue): settle if that has not happened yet.
      if (this.endVerdict !== undefined) this.settle(this.endVerdict)
      return
    }
    this.clearTimer()
    let verdict = this.endVerdict
    if (verdict === undefined) {
      if (err !== null && typeof err === 'object' && LOCAL_ERRORS.has(err.code)) verdict = 'rejected'
      else verdict = this.errorVerdict(err)
      if (this.classifyError !== undefined) err = this.classifyError
      else if (this.policy !== null && this.state === SENT && this.retried(verdict, err)) return
      else if (this.unreplayable !== null && this.state === SENT) this.unreplayed(verdict)
    }
    this.state = DONE
    this.settle(verdict)
    this.handler.onResponseError?.(this.controller, err)
  }

  // ---- ends ----------------------------------------------------------------------------------

  callerAborted(reason) {
    if (this.state === BACKOFF) {
      this.endBackoff(reason)
      return
    }
    if (this.state === READING) {
      this.stopReading(reason)
      return
    }
    if (this.state === WAITING) {
      this.state = DONE
      this.wait?.abort(reason) // leaves resilix's queue; its rejection is ignored (refused)
      deliverError(this, reason)
      return
    }
    if (this.state === DONE) return
    // Before the headers the call is cancelled: no observation. After them the upstream has
    // answered, and the verdict of its status stands.
    this.abortWith(reason, this.state === BODY ? this.verdict : 'rejected')
  }

  /** Our deadline or body bound passed. */
  expired() {
    if (this.state === READING) {
      this.stopReading(new TimeoutError(this.key, this.s.timeoutMs, false))
    } else if (this.state === SENT) {
      // An attempt's own deadline (attemptTimeoutMs) may be retried; the request's may not.
      if (!this.overall && this.retried('timeout', undefined)) return
      const ms = this.overall ? this.s.timeoutMs : this.policy.attemptTimeoutMs
      this.abortWith(new TimeoutError(this.key, ms, false), 'timeout')
    } else if (this.state === BODY) {
      const t = now()
      if (this.firstChunkDeadline() && t - this.t0 >= this.s.timeoutMs) {
        const err = new TimeoutError(this.key, this.s.timeoutMs, false)
        err.message = `resilix: the response from "${this.key}" delivered no body chunk within ${this.s.timeoutMs} ms (timeoutMs, marking at the first chunk)`
        this.abortWith(err, 'timeout')
        return
      }
      if (this.s.bodyTimeoutMs !== undefined && t - this.lastData >= this.s.bodyTimeoutMs) {
        const err = new TimeoutError(this.key, this.s.bodyTimeoutMs, false)
        err.message = `resilix: the response body from "${this.key}" delivered nothing for ${this.s.bodyTimeoutMs} ms (bodyTimeoutMs)`
        // Paused: nobody read it, the upstream is not to blame. Flowing yet silent: it stalled.
        this.abortWith(err, this.controller._paused ? this.verdict : 'timeout')
        return
      }
      this.armBodyTimer() // fired early: a chunk came meanwhile
    }
  }

  /**
   * Marking at the first chunk, `timeoutMs` runs until it comes. Not while the caller has
   * paused the body: then nothing is read, and only `bodyTimeoutMs` applies (as to any unread
   * body), with the response's verdict.
   */
  firstChunkDeadline() {
    return this.markPending && this.s.timeoutMs !== undefined && !this.controller._paused
  }

  /** Arms the timer for the earlier of the first-chunk deadline and the body's idle bound. */
  armBodyTimer() {
    let at = Infinity
    if (this.firstChunkDeadline()) at = this.t0 + this.s.timeoutMs
    if (this.s.bodyTimeoutMs !== undefined) at = Math.min(at, this.lastData + this.s.bodyTimeoutMs)
    if (at === Infinity) return
    this.timer = setTimeout(onTimer, delayMs(at - now(), 1), this)
    this.timer.unref()
  }

  /** Aborts the dispatch; the caller gets `reason`, the permit settles with `verdict`. */
  abortWith(reason, verdict) {
    this.clearTimer()
    this.endReason = reason
    this.endVerdict = verdict
    if (this.down !== null) this.down.abort(reason) // reports back through onResponseError
    if (this.state !== DONE) {
      // Not started by the dispatcher yet (still in its queue), or it reports later: answer now
      // and free the slot; onRequestStart stops the request before it is sent.
      this.state = DONE
      this.settle(verdict)
      deliverError(this, reason)
    }
  }

  // ---- retry ---------------------------------------------------------------------------------

  /**
   * The running attempt ended with `verdict` (`x`: what carries a Retry-After hint): true when
   * it is retried, the attempt abandoned and its permit settled; false when the caller is to get
   * this outcome. A hint beyond the deadline ends the request with its TimeoutError (true).
   */
  retried(verdict, x) {
    if (this.controller._aborted) return false
    const code = V.codeOf(verdict)
    if (code === undefined) return false
    const hint = retryAfterOf(x)
    const timeoutMs = this.s.timeoutMs
    const left = timeoutMs === undefined ? -1 : Math.max(0, timeoutMs - (now() - this.t0))
    // Decided before the settle below: the engine judges the verdict as the breaker will (ADR 1224), so an
    // attempt that opens the breaker ends the retries with its own outcome, as execute's does.
    const d = decide(this.permit._ks, this.attempts, code, hint, left, this.delay, this.policy, this.permit._permit)
    if (d === RETRY_AFTER_REFUSED) {
      this.abortWith(retryAfterError(this.key, timeoutMs, Math.min(hint, this.policy.maxRetryAfterMs), left, undefined), verdict)
      return true
    }
    if (d === THROTTLE_REFUSED) this.s.rx._events.rejected(REJECTED_THROTTLE, this.key, this.permit._ks, this.prio(), undefined, this.attempts + 1)
    if (d < 0) return false
    this.clearTimer()
    this.ks = this.permit._ks
    this.settle(verdict)
    const down = this.down
    this.down = null
    this.state = BACKOFF
    this.gen++ // the abandoned attempt's callbacks are dropped from here (Attempt)
    if (down !== null) down.abort(new Error('resilix/undici: attempt abandoned for a retry'))
    const rx = this.s.rx
    rx._events.retrying(this.key, this.attempts + 1, d, code)
    if (this.state !== BACKOFF) return true // a listener aborted the request
    if (rx._closed) {
      this.endBackoff(closedError('a request waiting to retry'))
      return true
    }
    this.delay = d
    this.backoff = new RequestBackoff(this, d)
    return true
  }

  /**
   * A request whose body could not be sent again ended with `verdict`: counted in
   * `stats(key).retryBodyRefusals` when its policy would have retried it (ADR 0811).
   */
  unreplayed(verdict) {
    const p = this.unreplayable
    this.unreplayable = null
    const code = V.codeOf(verdict)
    if (code !== undefined && p.attempts > 1 && (p.retryOn & (1 << code)) !== 0) this.permit._ks.retryBodyRefusals++
  }

  /** The request's priority and tenant as a refusal tells them (null: it named neither). */
  prio() {
    if (this.priority === undefined && this.tenant === undefined) return null
    return { cls: PRIORITIES.indexOf(this.priority ?? 'normal'), tenant: this.tenant }
  }

  /**
   * What is left of the request's deadline (undefined: none), or null once it has passed: the
   * request then ends with its TimeoutError.
   */
  timeLeft() {
    if (this.s.timeoutMs === undefined) return undefined
    const left = this.s.timeoutMs - (now() - this.t0)
    if (left > 0) return left
    this.state = DONE
    deliverError(this, new TimeoutError(this.key, this.s.timeoutMs, false))
    return null
  }

  /** The backoff ended: the next attempt waits for its own permit within what is left. */
  nextAttempt() {
    this.backoff = null
    this.state = WAITING
    this.permit = null
    const left = this.timeLeft()
    if (left === null) return
    // The throttle decided this retry before its wait: not drawn again (ADR 1004).
    native.throttlePass(this.ks.handle)
    this.acquire(left)
  }

  /** The caller aborted, or close(), between two attempts. */
  endBackoff(err) {
    if (this.backoff !== null) this.backoff.cancel()
    this.backoff = null
    this.state = DONE
    deliverError(this, err)
  }

  // ---- verdicts ------------------------------------------------------------------------------

  responseVerdict(statusCode, headers) {
    this.outcome = { statusCode, headers }
    const fallback = V.NAMES[V.classifyValue({ statusCode })]
    return this.custom({ ok: true, value: { statusCode, headers } }, fallback)
  }

  errorVerdict(err) {
    this.outcome = err
    return this.custom({ ok: false, error: err }, V.NAMES[V.classifyError(err)])
  }

  custom(outcome, fallback) {
    if (this.s.classify === undefined) return fallback
    let v
    try {
      v = this.s.classify(outcome)
    } catch (err) {
      this.classifyError = err
      return fallback
    }
    if (v === undefined) return fallback
    if (V.codeOf(v) === undefined) {
      this.classifyError = new TypeError(
        `resilix/undici: classify returned ${describe(v)}; expected one of 'success', 'failure', 'overload', 'answered', 'timeout', 'rejected' or undefined`,
      )
      return fallback
    }
    return v
  }

  settle(verdict) {
    if (this.permit === null || this.released) return
    this.released = true
    const code = V.codeOf(verdict)
    // What the verdict was read from: a 503 without Retry-After is no refusal (ADR 1004).
    this.permit._release(code, V.settleCode(code, this.outcome))
  }

  clearTimer() {
    if (this.timer !== null) {
      clearTimeout(this.timer)
      this.timer = null
    }
  }
}

/** Whether a request may be retried: its policy, or null (ADR 0903); its body is not looked at. */
function retryPolicy(s, opts, handler) {
  if (!s.retryMethods.has(String(opts.method).toUpperCase())) return null
  // undici's retry interceptor composed outside this one owns retrying: one layer retries.
  if (handler.retryOpts !== null && typeof handler.retryOpts === 'object') return null
  return s.retry
}

/** The handler of one attempt of a retried request: it forwards while its attempt is current. */
class Attempt {
  constructor(req) {
    this.req = req
    this.gen = req.gen
  }

  get current() {
    return this.req.gen === this.gen
  }

  onRequestStart(controller, context) {
    if (this.current) this.req.onRequestStart(controller, context)
    else controller.abort(new Error('resilix/undici: attempt abandoned for a retry'))
  }

  onResponseStarted() {
    if (this.current) this.req.onResponseStarted()
  }

  onRequestUpgrade(controller, statusCode, headers, socket) {
    if (this.current) this.req.onRequestUpgrade(controller, statusCode, headers, socket)
  }

  onResponseStart(controller, statusCode, headers, statusMessage) {
    if (this.current) return this.req.onResponseStart(controller, statusCode, headers, statusMessage)
  }

  onResponseData(controller, chunk) {
    if (this.current) return this.req.onResponseData(controller, chunk)
  }

  onResponseEnd(controller, trailers) {
    if (this.current) this.req.onResponseEnd(controller, trailers)
  }

  onResponseError(controller, err) {
    if (this.current) this.req.onResponseError(controller, err)
  }
}

/** The wait between two attempts; close() ends it (it is one of the instance's backoffs). */
class RequestBackoff {
  constructor(req, ms) {
    this.req = req
    this.timer = setTimeout(() => {
      req.s.rx._backoffs.delete(this)
      req.nextAttempt()
    }, delayMs(ms))
    req.s.rx._backoffs.add(this)
  }

  cancel() {
    clearTimeout(this.timer)
    this.req.s.rx._backoffs.delete(this)
  }

  /** close(). */
  abort(err) {
    this.req.endBackoff(err)
  }
}

function onTimer(req) {
  req.timer = null
  req.expired()
}

/** The caller's last callback when no dispatcher call is on the stack (a timer, a promise). */
function deliverError(req, err) {
  try {
    req.handler.onResponseError?.(req.controller, err)
  } catch (e) {
    // As a throwing handler inside undici would: an uncaught exception, never lost state here.
    queueMicrotask(() => {
      throw e
    })
  }
}

/**
 * Reads a response's usage for the quota (ADR 1100): each event of an event stream, or the
 * whole body (up to 1 MiB) of any other, goes to the `usage` function; what it returns, merged,
 * settles the call's charge at the end of the body.
 */
class UsageScan {
  constructor(headers) {
    let type = headers?.['content-type']
    if (Array.isArray(type)) type = type[0]
    this.events = typeof type === 'string' && type.toLowerCase().startsWith('text/event-stream')
    this.text = ''
    this.bytes = 0
    this.found = undefined
  }

  add(chunk, req) {
    this.bytes += chunk.length
    if (!this.events) {
      if (this.bytes <= USAGE_BODY_BYTES) this.text += chunk.toString()
      return
    }
    this.text += chunk.toString()
    let nl
    while ((nl = this.text.indexOf('\n')) >= 0) {
      const line = this.text.slice(0, nl)
      this.text = this.text.slice(nl + 1)
      if (line.startsWith('data:')) this.read(line.slice(5).trim(), req)
    }
  }

  end(req) {
    if (!this.events && this.bytes <= USAGE_BODY_BYTES) this.read(this.text, req)
    this.text = ''
    if (this.found !== undefined) {
      try {
        req.permit.charge(req.s.usageDone(this.found))
      } catch {} // a usage naming no budget of the quota: the estimate stands
    }
  }

  read(text, req) {
    let u
    try {
      u = req.s.usageOf(text)
    } catch {
      return // the user's reader failed on this text: no usage from it
    }
    // Merged: a stream may report its usage in parts (Anthropic: input, then output).
    if (u !== undefined && u !== null) this.found = this.found === undefined ? u : { ...this.found, ...u }
  }
}

module.exports = { ResilientRequest }
