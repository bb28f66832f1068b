// ESM entry of resilix/otel: the same module instance as require('resilix/otel').
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const m = require('./otel.js')

export const { instrument } = m
export default m
