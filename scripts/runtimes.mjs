// The runtimes the compatibility suite (__test__/compat/) runs under: each Node of
// node-versions.mjs, then Bun and Deno. Bun and Deno are the devDependencies `bun` and `deno`,
// npm aliases of their linux-x64 platform packages: the binaries themselves, with no install
// script to approve or block (ADR 0805). They are required: a missing or broken binary is a
// failure that names it, never a skip. RESILIX_BUN / RESILIX_DENO point at another binary.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { nodeVersions } from './node-versions.mjs'

export const COMPAT_SUITE = join('__test__', 'compat', 'suite.mjs')

// What Deno needs, and all it gets: the addon is loaded through FFI, its loader reads files and
// the environment, the interceptor checks talk to a local server.
export const DENO_PERMISSIONS = ['--allow-read', '--allow-env', '--allow-ffi', '--allow-net']

const REQUIRED = [
  {
    label: 'bun',
    override: 'RESILIX_BUN',
    path: ['node_modules', 'bun', 'bin', 'bun'],
    package: 'the devDependency "bun" (npm:@oven/bun-linux-x64)',
    env: { NO_COLOR: '1' },
    // --no-install: never fetch a missing package from the registry on the fly.
    args: (file) => ['--no-install', file],
  },
  {
    label: 'deno',
    override: 'RESILIX_DENO',
    path: ['node_modules', 'deno', 'deno'],
    package: 'the devDependency "deno" (npm:@deno/linux-x64-glibc)',
    env: { NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
    args: (file) => ['run', '--no-prompt', '--no-lock', ...DENO_PERMISSIONS, file],
  },
]

/** The version a binary reports, or why it cannot run: `{ version }` or `{ error }`. */
function probe(label, bin, origin) {
  if (!existsSync(bin)) return { error: `${label}: no binary at ${bin} (${origin})` }
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 60_000 })
  if (r.error) return { error: `${label}: ${bin} does not run: ${r.error.code ?? r.error.message}` }
  if (r.status !== 0) return { error: `${label}: \`${bin} --version\` exited with ${r.status ?? r.signal}: ${(r.stderr || r.stdout).trim().slice(0, 200)}` }
  const version = /\d+\.\d+\.\d+/.exec(r.stdout)?.[0]
  if (!version) return { error: `${label}: \`${bin} --version\` printed no version: ${r.stdout.trim().slice(0, 200)}` }
  return { version }
}

/**
 * Every runtime, in order: `{ label, bin, version, args(file), env }`, or with `error` (and no
 * version) for a required runtime that cannot run.
 */
export function runtimes(root, env = process.env) {
  const out = nodeVersions(root).map(({ label, bin, version }) => ({ label, bin, version, args: (file) => [file], env: {} }))
  for (const r of REQUIRED) {
    const bin = env[r.override] || join(root, ...r.path)
    const origin = env[r.override] ? `set by ${r.override}` : `${r.package}: run \`npm ci\``
    out.push({ label: r.label, bin, args: r.args, env: r.env, ...probe(r.label, bin, origin) })
  }
  return out
}
