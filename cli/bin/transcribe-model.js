#!/usr/bin/env node
// Thin launcher: the model command is TypeScript, run by Node ≥ 22.18's built-in type stripping.
// With Node's module compile cache on, as cli/bin/transcribe.js says why.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { main } = await import('../model.ts');
process.exitCode = await main(process.argv.slice(2));
