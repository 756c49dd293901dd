// Writes the prebuilt workflow bundle that production workers load (WORKFLOW_BUNDLE_PATH).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflows } from '../worker/bundle.js';

const target = path.resolve(process.argv[2] ?? 'dist/workflow-bundle.js');
const { code } = await bundleWorkflows();
await mkdir(path.dirname(target), { recursive: true });
await writeFile(target, code);
console.log(JSON.stringify({ bundle: target, bytes: Buffer.byteLength(code) }));
