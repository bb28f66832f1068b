'use strict'
// Every timer's delay goes through delayMs(): Node's setTimeout accepts at most 2^31 − 1 ms and
// fires a longer delay after 1 ms with a TimeoutOverflowWarning, so a wait of days would spin
// (ADR 1104). A timer clamped short fires early; its owner looks again and re-arms.

/** The longest delay setTimeout accepts, ms (about 24.8 days). */
const MAX_DELAY_MS = 2147483647

/** `ms` as a delay setTimeout accepts: from `min` (default 0) to MAX_DELAY_MS; NaN is `min`. */
function delayMs(ms, min = 0) {
  if (!(ms >= min)) return min
  return ms < MAX_DELAY_MS ? ms : MAX_DELAY_MS
}

module.exports = { delayMs, MAX_DELAY_MS }
