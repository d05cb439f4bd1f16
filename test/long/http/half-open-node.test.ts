/** Thousands of half-open connections on the node:http front (test/long/http/half-open.ts). */
import { halfOpenSuite } from './half-open.js';

halfOpenSuite('node');
