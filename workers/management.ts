/**
 * The management actor (src/management/actor.ts; its mailbox is src/management/mailbox.ts), in a
 * process of its own or a worker thread (src/management/transport.ts). It imports the management
 * layer and the database drivers; the evaluation workers (evaluator.ts) import neither.
 */
import { ManagementActorMain } from '../src/management/actor.js';
import { actorPort } from '../src/management/transport.js';

new ManagementActorMain(actorPort());
