/** The snapshot feed's query (docs/feed.md, "Requests"): `?stage=`, nothing else. */
import { z } from 'zod';
import { parseInput } from './common.js';

export const feedQuerySchema = z.strictObject({
  stage: z.string().min(1).max(200).optional(),
});

export type FeedQuery = z.infer<typeof feedQuerySchema>;

/** `GET /sdk/v1/snapshot?stage=` and `/sdk/v1/stream?stage=`; an unknown parameter is 400. */
export function parseFeedQuery(data: unknown): FeedQuery {
  return parseInput(feedQuerySchema, data, 'query');
}
