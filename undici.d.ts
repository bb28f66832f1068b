// resilix/undici: resilix as an undici interceptor. Needs undici 7 or newer (an optional peer
// dependency: only this entry point's users need it).
import type { Dispatcher } from 'undici'
import type { Cost, Priority, Resilix, RetryOptions, Verdict } from './index.js'

/** A response's status and headers (lower-case names), as `classify` and `mark` see them. */
export interface ResponseHead {
  statusCode: number
  headers: Record<string, string | string[] | undefined>
}

/** A response or a failed request, as the interceptor's `classify` sees it. */
export type ResponseOutcome = { ok: true; value: ResponseHead } | { ok: false; error: unknown }

/** Where a response's latency sample ends: at its headers, or at the first chunk of its body. */
export type MarkAt = 'headers' | 'firstChunk'

export interface InterceptorOptions {
  /**
   * The key of a request: a fixed string, or a function of the dispatch options. Default: the
   * request's origin (`'https://api.example.com'`). A Pool or Client dispatches without an
   * origin: give it a key.
   */
  key?: string | ((options: Dispatcher.DispatchOptions) => string)
  /**
   * Deadline in ms from the dispatch to the mark (the response headers, or the first body chunk
   * when marking there), queue wait included; then the request is aborted and the caller gets a
   * `TimeoutError` (after the headers, as the body's error). Default: the instance's
   * `timeoutMs`. `false`: none.
   */
  timeoutMs?: number | false
  /**
   * Where the latency the limiter learns from ends: `'headers'`, or `'firstChunk'` (the first
   * chunk of the body: the first event or token of a stream whose server sends its headers at
   * once). A function of the response chooses per response. Default: `'firstChunk'` for
   * `text/event-stream` and `application/x-ndjson` responses, `'headers'` for the rest. The
   * slot is held until the body ends either way.
   */
  mark?: MarkAt | ((response: ResponseHead) => MarkAt)
  /**
   * After the headers, the most time in ms the body may go without delivering a chunk, whether
   * the upstream stalls or nobody reads it; then the request is aborted and its slot freed.
   * Default 60000 (nginx's `proxy_read_timeout`; a guess for this use). `false`: none, and a
   * body nobody reads holds its slot until the connection closes.
   */
  bodyTimeoutMs?: number | false
  /**
   * Overrides the default classification (429/503 `overload`, other 4xx `answered`, 5xx and
   * errors `failure`, the rest `success`). Return a verdict, or `undefined` for the default.
   * Called at the response headers, or with the error of a request that failed before them.
   */
  classify?: (outcome: ResponseOutcome) => Verdict | undefined
  /**
   * Retries of requests through this interceptor: `false` none, `true` the instance's policy (or
   * the defaults), an object laid over it. Only methods in `retryMethods` are retried, and only
   * when the body can be sent again (see `replayBodyBytes`). `timeoutMs` then bounds every
   * attempt and backoff. An undici retry interceptor composed inside this one is told not to
   * retry; composed outside, it owns retrying. Default: the instance's `retry`.
   */
  retry?: RetryOptions | boolean
  /** The methods that may be retried. Default `['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']` (idempotent in RFC 9110). */
  retryMethods?: readonly string[]
  /**
   * The largest stream body read into memory before the first attempt so that a retry can send
   * it again (fetch hands every body over as a stream); its size is the request's
   * `content-length`. A larger body, or one of unknown size, is sent once and a retry it would
   * have had is counted in `stats(key).retryBodyRefusals`. A string, bytes, a `Blob` or
   * `FormData` given to `request()` is sent again as it is. `0`: never read. Default 1 MiB.
   */
  replayBodyBytes?: number
  /**
   * Each request's class in its key's queue (see `ExecuteOptions.priority`): a class, or a
   * function of the dispatch options (`undefined`: `'normal'`). Default `'normal'`.
   */
  priority?: Priority | ((options: Dispatcher.DispatchOptions) => Priority | undefined)
  /**
   * Who each request is for (see `ExecuteOptions.tenant`): a name, or a function of the
   * dispatch options (`undefined`: none), e.g. `(o) => o.headers?.['x-account']`. Default: none.
   */
  tenant?: string | ((options: Dispatcher.DispatchOptions) => string | undefined)
  /**
   * With a quota: each request's estimated cost, or a function of the dispatch options, e.g.
   * `(o) => ({ tokens: estimate(o.body) })`. Default `{ requests: 1 }`. Needs an instance with a quota.
   */
  cost?: Cost | ((options: Dispatcher.DispatchOptions) => Cost | undefined)
  /**
   * With a quota: what a response really used, read from its body. `'openai'` reads OpenAI's
   * `usage` (of a body, or of a stream's last event with `stream_options.include_usage`),
   * `'anthropic'` Anthropic's (input tokens in `message_start`, output in `message_delta`); both
   * as `tokens` (input + output), `inputTokens` and `outputTokens`, whichever the quota names.
   * A function is given each event's data of an event stream, or the whole body (up to 1 MiB)
   * of any other response, and returns a usage or `undefined`; what it returns, merged, settles
   * the charge when the body ends. Default: none (the estimate stands).
   */
  usage?: 'openai' | 'anthropic' | ((text: string) => Cost | undefined)
  /**
   * With a quota: read each response's rate-limit headers and cool down after a 429 (see
   * `QuotaBudget.pace`). Default `true`.
   */
  pace?: boolean
}

/**
 * An undici interceptor: `new Agent().compose(interceptor(rx))`. Each request waits for a
 * permit of its key, the latency is marked at the response headers (at the first body chunk of
 * an event stream: `mark`), and the slot is held until the body ends, errors or is aborted. Refusals reach the caller as `RejectedError` (with
 * `fetch`, as the `cause` of its `TypeError`).
 * @throws {TypeError} when `rx` is not a Resilix, or an option is unknown or of the wrong type.
 * @throws {RangeError} when `timeoutMs` or `bodyTimeoutMs` is out of range.
 */
export declare function interceptor(rx: Resilix, options?: InterceptorOptions): Dispatcher.DispatcherComposeInterceptor
