/**
 * The GraphQL SDL (src/graphql/schema.ts `typeDefs`) passes every check graphql-js has: the node
 * builds its schema with `assumeValidSDL` and `assumeValid` (no checks at start), so this is where
 * an invalid SDL is caught.
 */
import t from 'tap';
import { buildSchema, GraphQLObjectType, GraphQLSchema, validateSchema } from 'graphql';
import { buildVexilSchema, typeDefs } from '../../../src/graphql/schema.js';

t.test('the SDL is valid, and the schema built from it too', async (t) => {
  const checked = buildSchema(typeDefs); // throws on an invalid SDL
  t.same(validateSchema(checked).map((e) => e.message), [], 'no schema errors');
  const built = buildVexilSchema({});
  // The node's schema skips the checks (its own validateSchema answers [] unasked): check its config afresh.
  const rechecked = new GraphQLSchema({ ...built.toConfig(), assumeValid: false });
  t.same(validateSchema(rechecked).map((e) => e.message), [], 'the executable schema, scalars and all, is valid with every check on');
  t.same(Object.keys(built.getTypeMap()).sort(), Object.keys(checked.getTypeMap()).sort(), 'the same types');
  t.ok(built.getQueryType() instanceof GraphQLObjectType, 'a query type');
});

t.test('an invalid SDL is refused by the same check', async (t) => {
  t.throws(() => buildSchema(typeDefs + '\ntype Query { again: Int }'), 'a second Query type');
  t.throws(() => buildSchema(typeDefs + '\ntype Broken { f: NoSuchType }'), 'an unknown type');
});
