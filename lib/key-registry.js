'use strict'
// An instance's keys: a key's KeyState, resolved with the engine on first use and kept while
// the engine keeps the key. The engine reuses an evicted key's slot at once: its name is
// forgotten here too, so the map stays bounded by maxKeys whatever keys callers invent.

const { native, REGISTRY_FULL, SLOT_SPAN, mapNativeError } = require('./native')
const { KeyState, checkKey } = require('./keys')
const { closedError } = require('./lifetime')

/** `key`'s KeyState on `rx`; null when the registry is full. */
function keyState(rx, key) {
  let ks = rx._keys.get(key)
  if (ks !== undefined) return ks
  checkKey(key)
  if (rx._closed) throw closedError('a call')
  let h
  try {
    h = native.resolveKey(rx._id, key)
  } catch (err) {
    throw mapNativeError(err)
  }
  if (h === REGISTRY_FULL) {
    rx._registry.refused++
    return null
  }
  const slot = h % SLOT_SPAN
  const old = rx._slotNames[slot]
  rx._slotNames[slot] = key
  if (old !== undefined && old !== key) {
    rx._keys.delete(old)
    rx._registry.evicted++
    if (rx._events.has('evict')) {
      rx._events.emit('evict', { key: old })
      if (rx._closed) throw closedError('a call') // by a listener
    }
  }
  ks = new KeyState(key, h)
  rx._keys.set(key, ks)
  if (rx._fleet !== null) rx._fleet.attach(ks)
  return ks
}

/**
 * `ks`'s key was evicted behind our back (cannot happen while calls are in flight): resolve it
 * again into the same KeyState, since the caller holds `ks` and may wait on it, and settles wake
 * only the line of the KeyState they hold. False when the registry is full.
 */
function resolveAgain(rx, ks) {
  rx._keys.delete(ks.name)
  const fresh = keyState(rx, ks.name)
  if (fresh === null) return false
  ks.handle = fresh.handle
  if (rx._fleet !== null) rx._fleet.adopt(ks, fresh)
  ks.observed = -1
  rx._keys.set(ks.name, ks)
  return true
}

module.exports = { keyState, resolveAgain }
