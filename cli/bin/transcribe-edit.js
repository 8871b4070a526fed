#!/usr/bin/env node
// Thin launcher: the edit command is TypeScript, run by Node ≥ 22.18's built-in type stripping.
import { main } from '../edit.ts';

process.exitCode = await main(process.argv.slice(2));
