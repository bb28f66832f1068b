'use strict'
// A custom `classify` over the default classification: it names a verdict or defers to the
// default; a throw or an unknown name becomes the error the caller gets (call._classifyError).

const V = require('./verdicts')
const { describe } = require('./describe')

function custom(classify, call, ok, x) {
  const fallback = ok ? V.classifyValue(x) : V.classifyError(x)
  let name
  try {
    name = classify(ok ? { ok: true, value: x } : { ok: false, error: x })
  } catch (err) {
    call._classifyError = err
    return fallback
  }
  if (name === undefined) return fallback
  const code = V.codeOf(name)
  if (code === undefined) {
    call._classifyError = new TypeError(
      `resilix: classify returned ${describe(name)}; expected one of 'success', 'failure', 'overload', 'answered', 'timeout', 'rejected' or undefined`,
    )
    return fallback
  }
  return code
}

module.exports = { custom }
