#!/usr/bin/env node
// Thin launcher: the CLI is TypeScript, run by Node ≥ 22.18's built-in type stripping.
import { main } from '../transcribe.ts';

process.exitCode = await main(process.argv.slice(2));
