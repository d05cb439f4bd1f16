#!/usr/bin/env node
/**
 * The container's health check (Dockerfile HEALTHCHECK, compose.yaml; docs/deploy.md): exit 0 when
 * the node's /readyz answers 200 (snapshots loaded, database answering), else 1. Node's own fetch:
 * the image needs no curl. A file rather than `node -e '…'` because podman-compose 1.0.3 re-quotes
 * a health check's arguments through a shell and breaks any that hold quotes.
 */
const host = !process.env.HOST || process.env.HOST === '0.0.0.0' || process.env.HOST === '::' ? '127.0.0.1' : process.env.HOST;
const url = `http://${host.includes(':') ? `[${host}]` : host}:${process.env.PORT || 8080}/readyz`;
fetch(url, { signal: AbortSignal.timeout(4000) }).then(
  (r) => process.exit(r.status === 200 ? 0 : 1),
  () => process.exit(1),
);
