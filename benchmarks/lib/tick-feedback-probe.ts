/**
 * Preloaded into a server by benchmarks/tick-feedback.ts (`node --allow-natives-syntax --import`):
 * on SIGUSR2, prints V8's own view of `process.nextTick` (its feedback vector) to stdout.
 */

process.on('SIGUSR2', () => {
  // V8 natives are not TypeScript syntax; eval parses them under --allow-natives-syntax.
  // biome-ignore lint/security/noGlobalEval: the only way to reach %DebugPrint from a module
  eval('%DebugPrint(process.nextTick)');
});
