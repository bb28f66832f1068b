'use strict'
// resilix/undici: resilix as an undici interceptor, in undici's own composition style:
//   new Agent().compose(interceptor(rx, options))
// Every request through that dispatcher (fetch included, with setGlobalDispatcher) waits for a
// permit of its key, has its latency marked at the response headers or at the first chunk of an
// event stream (ADR 0809), and holds its slot until its body ends. This module never loads
// undici itself (ADR 0800).

const { interceptorSettings } = require('./lib/interceptor/options')
const { ResilientRequest } = require('./lib/interceptor/request')

/**
 * @param {import('./index').Resilix} rx
 * @param {import('./undici').InterceptorOptions} [options]
 */
function interceptor(rx, options) {
  const settings = interceptorSettings(rx, options)
  return function resilixInterceptor(dispatch) {
    if (typeof dispatch !== 'function') {
      throw new TypeError(`resilix/undici: an interceptor wraps a dispatch function, got ${typeof dispatch}`)
    }
    return function dispatchWithResilix(opts, handler) {
      // undici 7's compose hands every interceptor a handler of the controller API
      // (onRequestStart, onResponseStart, …), wrapping older ones; anything else is a misuse.
      if (handler === null || typeof handler !== 'object' || typeof handler.onRequestStart !== 'function') {
        throw new TypeError(
          'resilix/undici: the handler has no onRequestStart: use the interceptor through Dispatcher.compose() of undici 7 or newer',
        )
      }
      new ResilientRequest(settings, dispatch, opts, handler).start()
      return true
    }
  }
}

module.exports = { interceptor }
