/**
 * A preload for end-to-end tests of a command (`node --import ./test-support/asr-fault.ts ...`): every
 * model load in that process gets the test fault named by ASR_TEST_FAULT (engine/asr/seams.ts). Only
 * this file reads that variable, and no product code imports it: a fault only tests can set.
 */
import { setProcessLoadSeams, type TestFault } from '../engine/asr/testing.ts';

const fault = process.env.ASR_TEST_FAULT;
if (fault) setProcessLoadSeams({ testFault: fault as TestFault });
