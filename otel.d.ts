// resilix/otel: resilix's calls and state as OpenTelemetry metrics. Needs @opentelemetry/api 1.7
// or newer (an optional peer dependency) unless a meter is given, and an SDK's MeterProvider to
// export anything.
import type { Meter } from '@opentelemetry/api'
import type { Resilix } from './index.js'

export interface OtelOptions {
  /** The meter to record with. Default: `metrics.getMeter('resilix', version)` of @opentelemetry/api. */
  meter?: Meter
  /**
   * Bucket boundaries of the two duration histograms, seconds (advice: the SDK's views win).
   * Default `[0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]`
   * (OpenTelemetry's advice for `http.client.request.duration`).
   */
  buckets?: number[]
}

/** What `instrument` returns: `dispose()` stops recording and observing. */
export interface Instrumentation {
  dispose(): void
}

/**
 * Records one instance's metrics, each with the attribute `resilix.key`:
 * `resilix.call.duration` (histogram, s, + `resilix.verdict`), `resilix.call.wait_time`
 * (histogram, s), `resilix.call.rejections` (counter, + `resilix.rejection.reason`),
 * `resilix.queue.timeouts` (counter), and, observed per collection, `resilix.call.limit`,
 * `resilix.call.active`, `resilix.call.queued` and `resilix.breaker.state` (+ `resilix.breaker.state`).
 * @throws {TypeError} when `rx` is not a Resilix, or an option is unknown.
 * @throws {Error} `code: 'ERR_RESILIX_PEER_MISSING'` without a meter when @opentelemetry/api is not installed.
 */
export declare function instrument(rx: Resilix, options?: OtelOptions): Instrumentation
