/**
 * The management actor (src/management/actor.ts; its mailbox is src/management/mailbox.ts), a
 * process the node forks (src/management/transport.ts). It imports the management handlers and
 * the database drivers; the evaluation workers (evaluator.ts) and the front import neither.
 */
import { ManagementActorMain } from '../src/management/actor.js';
import { actorPort } from '../src/management/transport.js';

new ManagementActorMain(actorPort());
