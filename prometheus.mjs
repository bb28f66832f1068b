// ESM entry of resilix/prometheus: the same module instance as require('resilix/prometheus').
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const m = require('./prometheus.js')

export const { instrument } = m
export default m
