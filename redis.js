'use strict'
// resilix/redis: a quota shared by every process of a fleet through Redis (ADR 1102). The
// client is yours (ioredis, its Cluster, or node-redis): this module loads no Redis library.

const { RedisQuotaStore } = require('./lib/store/redis')

/**
 * A quota store in Redis, for `new Resilix({ quota, quotaStore })`.
 * @param {object} client a connected ioredis client or Cluster, or a node-redis client
 * @param {import('./redis').RedisQuotaStoreOptions} [options]
 */
function redisQuotaStore(client, options) {
  return new RedisQuotaStore(client, options)
}

module.exports = { redisQuotaStore }
