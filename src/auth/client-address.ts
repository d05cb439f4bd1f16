/**
 * The client's address of an exchange, for the failed-authentication budget (docs/limits.md,
 * "Failed authentications"), as a source that authenticate.ts asks only when it needs it (a known
 * key never does).
 */
import type { Incoming } from '../http/handler.js';
import type { AddressSource } from './authenticate.js';

export const clientAddress = (inc: Incoming): AddressSource => inc.remoteAddress;
