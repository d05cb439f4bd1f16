/** Thousands of half-open connections on the node:http front (test/http/half-open.ts). */
import { halfOpenSuite } from './half-open.js';

halfOpenSuite('node');
