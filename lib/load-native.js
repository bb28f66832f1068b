'use strict'
// Loads the native addon through napi's generated loader (../native.js) and, when that fails, throws an
// error a user can act on. napi's own message is "Cannot find native binding. npm has a bug related to
// optional dependencies ..." for every failure, including platforms no binary exists for, which sends
// users after an npm bug they do not have. This file says what was detected, whether a prebuilt binary
// exists for it, and what to do. It runs the detection only on the failure path: loading costs nothing extra.

const pkg = require('../package.json')

/**
 * The prebuilt binaries, one npm package each (`resilix-<abi>`). Must equal package.json napi.targets
 * (__test__/load-native.test.mjs checks). `libc` is null where the platform has one C library.
 */
const SUPPORTED_TARGETS = Object.freeze([
  { triple: 'x86_64-unknown-linux-gnu', platform: 'linux', arch: 'x64', libc: 'glibc', abi: 'linux-x64-gnu' },
  { triple: 'aarch64-unknown-linux-gnu', platform: 'linux', arch: 'arm64', libc: 'glibc', abi: 'linux-arm64-gnu' },
  { triple: 'x86_64-unknown-linux-musl', platform: 'linux', arch: 'x64', libc: 'musl', abi: 'linux-x64-musl' },
  { triple: 'aarch64-unknown-linux-musl', platform: 'linux', arch: 'arm64', libc: 'musl', abi: 'linux-arm64-musl' },
  { triple: 'x86_64-apple-darwin', platform: 'darwin', arch: 'x64', libc: null, abi: 'darwin-x64' },
  { triple: 'aarch64-apple-darwin', platform: 'darwin', arch: 'arm64', libc: null, abi: 'darwin-arm64' },
  { triple: 'x86_64-pc-windows-msvc', platform: 'win32', arch: 'x64', libc: null, abi: 'win32-x64-msvc' },
].map((t) => Object.freeze({ ...t, packageName: `${pkg.name}-${t.abi}` })))

const PLATFORM_NAMES = { linux: 'Linux', darwin: 'macOS', win32: 'Windows' }

/** 'glibc' | 'musl' on Linux, null elsewhere. Same signals as napi's loader: the process report first. */
function detectLibc(platform = process.platform) {
  if (platform !== 'linux') return null
  try {
    const report = process.report && process.report.getReport()
    const header = report && (typeof report === 'string' ? JSON.parse(report).header : report.header)
    if (header && header.glibcVersionRuntime) return 'glibc'
    const libs = report && report.sharedObjects
    if (Array.isArray(libs) && libs.some((f) => f.includes('libc.musl-') || f.includes('ld-musl-'))) return 'musl'
  } catch {}
  try {
    if (require('node:fs').readFileSync('/usr/bin/ldd', 'utf8').includes('musl')) return 'musl'
  } catch {}
  return 'glibc'
}

/** The host as the loader sees it. Every field can be injected (tests, tooling). */
function detectHost(overrides = {}) {
  const platform = overrides.platform ?? process.platform
  const arch = overrides.arch ?? process.arch
  const libc = overrides.libc !== undefined ? overrides.libc : detectLibc(platform)
  return { platform, arch, libc }
}

/** The prebuilt target for a host, or undefined. */
function targetFor(host) {
  return SUPPORTED_TARGETS.find(
    (t) => t.platform === host.platform && t.arch === host.arch && (t.libc === null || t.libc === host.libc),
  )
}

/** "linux x64 (musl)" */
function formatHost(host) {
  return `${host.platform} ${host.arch}${host.libc ? ` (${host.libc})` : ''}`
}

function supportedList() {
  return SUPPORTED_TARGETS.map((t) => `${PLATFORM_NAMES[t.platform]} ${t.arch}${t.libc ? ` ${t.libc}` : ''}`).join(', ')
}

/** napi's loader chains one error per candidate it tried through `cause`; the messages, outermost last. */
function causeChain(err, max = 6) {
  const out = []
  for (let e = err, i = 0; e != null && i < 16; e = e.cause, i++) {
    out.push(e instanceof Error ? e.message.split('\n')[0] : String(e))
  }
  return out.reverse().slice(0, max)
}

function repositoryUrl() {
  const r = pkg.repository
  const url = typeof r === 'string' ? r : r && r.url
  return url ? url.replace(/^git\+/, '') : null
}

function installedVersionOf(packageName, resolveFrom) {
  try {
    return resolveFrom(`${packageName}/package.json`).version
  } catch {
    return null
  }
}

/**
 * The error thrown when no binding loads: what was detected, why it failed, what to do.
 * @param {{platform: string, arch: string, libc: string|null}} host
 * @param {unknown} cause the loader's error (kept as `cause`, with napi's per-candidate errors chained)
 * @param {{ env?: object, resolveFrom?: (id: string) => any }} [ctx]
 */
function nativeLoadError(host, cause, ctx = {}) {
  const env = ctx.env ?? process.env
  const resolveFrom = ctx.resolveFrom ?? require
  const target = targetFor(host)
  const lines = []
  const repo = repositoryUrl()
  const buildFromSource =
    `build it from source with a Rust toolchain (https://rustup.rs, Rust >= 1.88): clone ${repo ?? 'the resilix repository'}, ` +
    `run \`npm ci && npm run build\`, and set NAPI_RS_NATIVE_LIBRARY_PATH to the absolute path of the resilix.*.node file it writes.`
  let showCauses = true
  if (env.NAPI_RS_NATIVE_LIBRARY_PATH) {
    lines.push(
      `${pkg.name}: could not load the native addon from NAPI_RS_NATIVE_LIBRARY_PATH=${env.NAPI_RS_NATIVE_LIBRARY_PATH} ` +
        `(detected ${formatHost(host)}).`,
      `Check that the file exists and was built for this platform, or unset NAPI_RS_NATIVE_LIBRARY_PATH to use the prebuilt binary.`,
    )
  } else if (!target) {
    lines.push(
      `${pkg.name}: no prebuilt native binary for this platform: detected ${formatHost(host)}.`,
      `Prebuilt binaries exist for: ${supportedList()}.`,
      `On another platform, ${buildFromSource}`,
    )
    showCauses = false // napi's candidates are all "module not found" here: noise
  } else {
    const installed = installedVersionOf(target.packageName, resolveFrom)
    if (installed === null) {
      lines.push(
        `${pkg.name}: ${formatHost(host)} is supported, but its binary package ${target.packageName} is not installed.`,
        `It is an optional dependency of ${pkg.name}; it is missing when optional dependencies were omitted ` +
          `(--omit=optional, --no-optional) or when node_modules/package-lock.json came from another platform ` +
          `(https://github.com/npm/cli/issues/4828).`,
        `Fix: \`npm install ${target.packageName}@${pkg.version}\`, or delete node_modules and package-lock.json and run \`npm install\` again.`,
      )
      showCauses = false
    } else {
      lines.push(
        `${pkg.name}: ${formatHost(host)} is supported and ${target.packageName}@${installed} is installed, but it failed to load.`,
        installed !== pkg.version
          ? `Its version differs from ${pkg.name}@${pkg.version}: reinstall so that both have the same version.`
          : `Reinstall it (\`npm install ${target.packageName}@${pkg.version}\`); if it still fails, report it with the cause below.`,
      )
    }
  }
  // Skip napi's own wrapper message (it blames an npm bug); its cause chain holds one error per candidate.
  if (showCauses) lines.push('Loader errors:', ...causeChain(cause && cause.cause ? cause.cause : cause).map((m) => `  - ${m}`))
  const err = new Error(lines.join('\n'), { cause })
  err.code = 'ERR_RESILIX_NATIVE_BINDING'
  err.host = host
  return err
}

let cached = null

/**
 * Returns the native binding (napi's native.js exports), loading it once.
 * Throws an Error with code 'ERR_RESILIX_NATIVE_BINDING' when no binding loads.
 * Options exist for tests: `host` overrides detection, `requireNative` replaces `require('../native.js')`.
 * @param {{ host?: Partial<{platform: string, arch: string, libc: string|null}>, requireNative?: () => any }} [options]
 */
function loadNative(options = {}) {
  const injected = options.host !== undefined || options.requireNative !== undefined
  if (cached && !injected) return cached
  const requireNative = options.requireNative ?? (() => require('../native.js'))
  let binding
  try {
    binding = requireNative()
  } catch (cause) {
    throw nativeLoadError(detectHost(options.host), cause)
  }
  if (!injected) cached = binding
  return binding
}

module.exports = { loadNative, nativeLoadError, detectHost, detectLibc, targetFor, formatHost, SUPPORTED_TARGETS }
