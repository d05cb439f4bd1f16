/**
 * The transpiler the tests' TypeScript loader uses (tsconfig.json, "ts-node"): esbuild instead of
 * TypeScript's own transpileModule, file by file and without type checks like it, at a fraction of
 * the CPU. Every test file is a process of its own that loads most of src/, so this is most of the
 * unit suite's time on a 2-core machine. `npm run typecheck` and the build still use tsc.
 */
const { transformSync } = require('esbuild');

exports.create = ({ nodeModuleEmitKind }) => ({
  transpile(input, { fileName }) {
    const out = transformSync(input, {
      loader: /\.[cm]?tsx$/.test(fileName) ? 'tsx' : 'ts',
      format: nodeModuleEmitKind === 'nodecjs' ? 'cjs' : 'esm',
      target: 'es2022',
      sourcemap: 'external',
      sourcefile: fileName,
      // tsconfig.json's target ES2022 implies define semantics for class fields, as tsc emits them.
      tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
    });
    return { outputText: out.code, sourceMapText: out.map };
  },
});
