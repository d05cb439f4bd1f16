/** The web UI's routes in the OpenAPI document (docs/api.md#admin-web-ui): static files, no credential. */
import { registerOperations } from '../../openapi/operations.js';

const redirect = { description: 'Found: the UI lives at /ui/', headers: { location: '/ui/' } };

registerOperations({
  'GET /': { summary: 'Redirects to the admin web UI', tags: ['Web UI'], responses: { 302: redirect, 404: { description: 'Never: documented for completeness' } } },
  'GET /ui': { summary: 'Redirects to the admin web UI', tags: ['Web UI'], responses: { 302: redirect, 404: { description: 'Never: documented for completeness' } } },
  'GET /ui/*': {
    summary: 'The admin web UI: index.html for app paths, hashed assets (immutable) by name',
    description: 'Brotli or gzip by Accept-Encoding; strict Content-Security-Policy. See the README "Web UI" section.',
    tags: ['Web UI'],
    params: { path: 'A file or an app path' },
    responses: {
      200: { description: 'The file', contentType: 'text/html' },
      404: { description: 'No such asset', schema: 'Problem', contentType: 'application/problem+json' },
    },
  },
});
