#!/usr/bin/env node
// Thin launcher: the batch command is TypeScript, run by Node 24's built-in type stripping.
// With Node's module compile cache on, as cli/bin/transcribe.js says why.
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('../../workers/batch/main.ts');
