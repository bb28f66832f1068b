// ESM entry of resilix/undici: the same module instance as require('resilix/undici').
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const undici = require('./undici.js')

export const { interceptor } = undici
export default undici
