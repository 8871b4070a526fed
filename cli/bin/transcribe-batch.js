#!/usr/bin/env node
// Thin launcher: the batch command is TypeScript, run by Node 24's built-in type stripping.
import '../../workers/batch/main.ts';
