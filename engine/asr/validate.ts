/** INVALID_OPTIONS checks of single values (booleans, ranges, objects, samples, signals) and thread limits. */

import { availableParallelism } from 'node:os';
import { EngineError } from '../errors.ts';
import type { RunOptions } from '../types.ts';

export function invalid(message: string): EngineError {
  return new EngineError('INVALID_OPTIONS', message);
}

export function checkBool(name: string, v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw invalid(`${name} must be a boolean.`);
  return v;
}

export function checkInt(name: string, v: unknown, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(`${name} must be an integer from ${min} to ${max}.`);
  }
  return v;
}

export function checkNum(name: string, v: unknown, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw invalid(`${name} must be a number from ${min} to ${max}.`);
  }
  return v;
}

export function checkObject(name: string, v: unknown): Record<string, unknown> {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(`${name} must be an object.`);
  return v as Record<string, unknown>;
}

export function checkPcm(pcm: unknown): Float32Array {
  if (!(pcm instanceof Float32Array)) throw invalid('pcm must be a Float32Array of 16 kHz mono samples.');
  if (pcm.length === 0) throw invalid('pcm is empty.');
  return pcm;
}

export function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (!(signal instanceof AbortSignal)) throw invalid('signal must be an AbortSignal.');
  return signal;
}

export function checkProgress(fn: unknown): RunOptions['onProgress'] {
  if (fn === undefined) return undefined;
  if (typeof fn !== 'function') throw invalid('onProgress must be a function.');
  return fn as RunOptions['onProgress'];
}

export const MAX_THREADS = 256;

/** A job's threads when the caller names none: min(4, cores). */
export function defaultThreads(): number {
  return Math.min(4, availableParallelism());
}
