/** Thousands of half-open connections on the uWebSockets.js front (test/long/http/half-open.ts). */
import { halfOpenSuite } from './half-open.js';

halfOpenSuite('uws');
