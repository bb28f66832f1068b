#!/usr/bin/env node
// Stages the main package for publishing: the files `npm pack` would take (package.json "files")
// and a published manifest without what only this repository needs: no `scripts` (npm 11 lists
// a `prepare` script as an install script to approve), no `devDependencies` (ADR 0802).
//   node scripts/stage-package.mjs DIR [--platform-deps]
// --platform-deps adds every platform package to optionalDependencies at the package version,
// as `napi pre-publish` writes them at release time. `npm publish DIR` / `npm pack DIR` then.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Fields of package.json that serve the repository only, never a user of the package. */
export const REPOSITORY_ONLY = ['scripts', 'devDependencies']

/** The manifest users get: package.json minus the repository-only fields. */
export function publishedManifest(pkg, { platformDeps = false } = {}) {
  const out = {}
  for (const [k, v] of Object.entries(pkg)) if (!REPOSITORY_ONLY.includes(k)) out[k] = v
  if (platformDeps) {
    const { SUPPORTED_TARGETS } = createRequire(import.meta.url)('../lib/load-native.js')
    out.optionalDependencies = Object.fromEntries(SUPPORTED_TARGETS.map((t) => [t.packageName, pkg.version]))
  }
  return out
}

function npm(args, cwd) {
  // npm_execpath is npm's own CLI when run via `npm run`; fall back to npm on PATH.
  const viaNode = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')
  const r = spawnSync(viaNode ? process.execPath : 'npm', viaNode ? [process.env.npm_execpath, ...args] : args, {
    cwd,
    encoding: 'utf8',
    shell: !viaNode && process.platform === 'win32',
  })
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${r.stderr || r.stdout}`)
  return r.stdout
}

/** Writes the package to publish into `dir` (emptied first); returns `dir`. */
export function stagePackage(dir, options = {}) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  rmSync(dir, { recursive: true, force: true })
  const [listing] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], root))
  for (const { path } of listing.files) {
    if (path.endsWith('.node')) throw new Error(`the main package must not ship ${path}: binaries go in npm/<abi> packages`)
    if (path === 'package.json') continue
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    cpSync(join(root, path), join(dir, path))
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(publishedManifest(pkg, options), null, 2) + '\n')
  return dir
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir, ...flags] = process.argv.slice(2)
  if (!dir || flags.some((f) => f !== '--platform-deps')) {
    console.error('usage: node scripts/stage-package.mjs DIR [--platform-deps]')
    process.exit(2)
  }
  console.log(stagePackage(resolve(dir), { platformDeps: flags.includes('--platform-deps') }))
}
