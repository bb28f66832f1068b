#!/usr/bin/env node
// `npm run pack:local`: writes to dist-pack/ the two tarballs a user on this platform would install from the
// registry: resilix-<version>.tgz (JS, typings, loader) and resilix-<abi>-<version>.tgz (this platform's
// binary, from npm/<abi>/ + the addon built here by the `build:release` command, without the test hooks of
// `npm run build`: scripts/release-binary.mjs, ADR 0402). When that build fails, nothing is packed.
//   node scripts/pack-local.mjs [--binary FILE]
// --binary packs a release addon built elsewhere (the release workflow's artifact, in test jobs
// without a Rust toolchain) instead of building one; one with test hooks is refused.
//
// Wired the napi-rs way: the main package lists every platform package in optionalDependencies at its own
// version, the way `napi pre-publish` writes them at publish time (release.yml). They are added to a staged
// copy, not to the committed package.json: before the platform packages exist on the registry, committed
// entries would break `npm ci` (the lockfile cannot resolve them; see docs/adr/0400-*.md).
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { assertNoTestHooks, buildReleaseBinary } from './release-binary.mjs'
import { stagePackage } from './stage-package.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const { detectHost, targetFor, formatHost } = require('../lib/load-native.js')

const outDir = join(root, 'dist-pack')
const stage = join(root, '.tmp', 'pack-local')

function fail(message) {
  console.error(`pack:local: ${message}`)
  process.exit(1)
}

function npm(args, cwd) {
  // npm_execpath is npm's own CLI when run via `npm run`; fall back to npm on PATH.
  const viaNode = process.env.npm_execpath && process.env.npm_execpath.endsWith('.js')
  const cmd = viaNode ? process.execPath : 'npm'
  const argv = viaNode ? [process.env.npm_execpath, ...args] : args
  const r = spawnSync(cmd, argv, { cwd, encoding: 'utf8', shell: !viaNode && process.platform === 'win32' })
  if (r.status !== 0) fail(`npm ${args.join(' ')} failed in ${cwd}:\n${r.stderr || r.stdout}`)
  return r.stdout
}

const args = process.argv.slice(2)
if (args.length && (args.length !== 2 || args[0] !== '--binary')) {
  console.error('usage: node scripts/pack-local.mjs [--binary FILE]')
  process.exit(2)
}
const given = args.length ? resolve(args[1]) : undefined

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const host = detectHost()
const target = targetFor(host)
if (!target) fail(`no napi target for this host (${formatHost(host)}); nothing to pack a binary for`)
const binaryFile = `${pkg.napi.binaryName}.${target.abi}.node`

rmSync(stage, { recursive: true, force: true })
rmSync(outDir, { recursive: true, force: true })
mkdirSync(outDir, { recursive: true })

// 1. This platform's binary package: the committed stub (napi create-npm-dirs) plus the addon built
//    as the release builds it, never the test build in the repository root.
let binary = given
try {
  if (given) assertNoTestHooks(given, 'pass a binary built by `npm run build:release`, or none to have one built.')
  else binary = buildReleaseBinary(join(stage, 'build'), binaryFile)
} catch (e) {
  fail(e.message)
}
const platformStage = join(stage, target.abi)
cpSync(join(root, 'npm', target.abi), platformStage, { recursive: true })
cpSync(binary, join(platformStage, binaryFile))

// 2. The main package: exactly what the release publishes (scripts/stage-package.mjs), with the
//    optionalDependencies `napi pre-publish` adds.
const mainStage = stagePackage(join(stage, 'main'), { platformDeps: true })

const tarballs = [mainStage, platformStage].map((dir) => {
  const [{ filename }] = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', outDir], dir))
  return join(outDir, filename)
})
for (const t of tarballs) console.log(t)
