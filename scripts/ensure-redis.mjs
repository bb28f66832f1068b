// The fleet tests run a real redis-server (the Debian package redis-server): installs it when it
// is missing and this runs as root (CI); otherwise says how, and the tests that need it fail
// naming it.
import { spawnSync } from 'node:child_process'

const bin = process.env.RESILIX_REDIS_SERVER ?? 'redis-server'
const has = () => spawnSync(bin, ['--version'], { encoding: 'utf8' }).status === 0
const apt = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0

if (!has()) {
  if (process.getuid?.() === 0 && spawnSync('apt-get', ['--version']).status === 0) {
    console.log('resilix: installing redis-server (apt-get) for the fleet tests…')
    if (!apt(['install', '-y', '-q', 'redis-server'])) {
      apt(['update', '-q'])
      apt(['install', '-y', '-q', 'redis-server'])
    }
  }
  if (!has()) {
    console.log(`resilix: ${bin} is missing: the fleet tests will fail. Install the redis-server package (apt-get install redis-server), or set RESILIX_REDIS_SERVER to its path`)
  }
}
if (has()) console.log(`resilix: ${spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim()}`)
