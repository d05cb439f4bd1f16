/**
 * The management actor's worker thread (src/management/actor.ts; its mailbox is
 * src/management/mailbox.ts). It imports the management layer and the database drivers; the
 * evaluation workers (evaluator.ts) import neither.
 */
import { parentPort } from 'node:worker_threads';
import { ManagementActorThread } from '../src/management/actor.js';

if (parentPort === null) throw new Error('workers/management.js runs as a worker thread');
new ManagementActorThread(parentPort);
