// ESM entry of resilix/redis: the same module instance as require('resilix/redis').
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const m = require('./redis.js')

export const { redisQuotaStore } = m
export default m
