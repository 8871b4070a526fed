#!/usr/bin/env node
console.log('hello from', process.version);
