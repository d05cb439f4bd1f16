# syntax=docker/dockerfile:1
# Vexil's container image (docs/deploy.md). Build: docker build -t vexil .
#                                                  podman build --format docker -t vexil .
#
# The base is an official Node.js image on Debian 13 (trixie): its glibc 2.41 loads the native
# uWebSockets.js front (/readyz says "http": "uws"). On a -bookworm image (glibc 2.36) the node
# falls back to node:http, at about 44 % of the throughput (README, "Requirements").
ARG NODE_IMAGE=docker.io/library/node:24-trixie-slim

# --- build: every dependency, then the node bundled, and only what runs ----------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Dependencies first, so that a source change reuses this layer. No install scripts: the one
# postinstall step that matters (the postgres.js patch) runs by hand. npm's cache is a cache mount:
# a changed lock file downloads only what changed. scripts/image-prune.mjs then drops what no
# runtime path on this platform loads (the other platforms' uWebSockets.js binaries: 220 MB), so
# that this layer stays small.
COPY package.json package-lock.json ./
COPY packages/openfeature-provider/package.json packages/openfeature-provider/
COPY scripts/patch-postgres.mjs scripts/image-prune.mjs scripts/size-of.mjs scripts/
RUN --mount=type=cache,id=vexil-npm,target=/root/.npm,sharing=locked \
    npm ci --ignore-scripts --prefer-offline --no-audit --no-fund \
 && node scripts/patch-postgres.mjs \
 && node scripts/image-prune.mjs node_modules
COPY . .
# scripts/image-bundle.mjs: the node, its workers and its pure-JavaScript dependencies bundled with
# esbuild from the sources (the type check is CI's), beside the few packages that cannot be bundled
# (native and WASM ones, Piscina); ui/build.mjs: the admin UI.
RUN node scripts/image-bundle.mjs /out \
 && node ui/build.mjs \
 && cp -a dist/ui /out/dist/ \
 && cp -a scripts/healthcheck.mjs /out/ \
 && mkdir -p /out/data

# --- runtime: Node.js, the bundled node, the packages it loads, migrations, the admin UI ------------
FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="Vexil" \
      org.opencontainers.image.description="Self-hosted feature flag service" \
      org.opencontainers.image.licenses="Apache-2.0"
# HOST: every interface of the container. VEXIL_DATA_DIR: the embedded database (PGlite) when no
# DATABASE_URL is set. The grace stays under the 10 s runtimes give a container after SIGTERM.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    VEXIL_DATA_DIR=/data \
    VEXIL_SHUTDOWN_GRACE_MS=8000
WORKDIR /app
# The application is root's and read-only to the node; only /data is the node's.
COPY --from=build /out/ /app/
COPY --from=build --chown=node:node /out/data /data
VOLUME /data
USER node
EXPOSE 8080
# /readyz with Node's own fetch (scripts/healthcheck.mjs): ready = snapshots loaded, database answering.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/app/healthcheck.mjs"]
# node is PID 1 and handles SIGTERM itself (src/main.ts): /readyz turns 503, in-flight requests get
# VEXIL_SHUTDOWN_GRACE_MS, the management actor and the database close, exit 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
