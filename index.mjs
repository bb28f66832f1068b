// ESM entry: the same module instance as require('resilix'), so errors' classes and brands match.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const resilix = require('./index.js')

export const { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError } = resilix
export default resilix
