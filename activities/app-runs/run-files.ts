import { ApplicationFailure } from '@temporalio/common';
import type { Database } from '../../shared/db/client.js';
import { AppError } from '../../shared/errors.js';
import { readFileBuffer, type FileStore } from '../../shared/storage/index.js';

// Files a run's activities read (PDF inputs, the `llm` block's native files): a file handle
// (`wf-file:<id>`, `storage://<id>`) is read from the run's own project only, and inline data is base64.

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The bytes of base64 text (whitespace ignored), or null when it is not base64. */
export function decodeBase64(text: string): Buffer | null {
  const compact = text.replace(/\s+/g, '');
  if (compact.length === 0 || compact.length % 4 === 1 || !BASE64.test(compact)) return null;
  return Buffer.from(compact, 'base64');
}

/**
 * The file a handle names, from the run's project (`runs.deployment_id` → `deployments.project_id`).
 * What retrying cannot fix (the run is gone; the file is missing, deleted, another project's, or
 * over `maxBytes`) is a non-retryable `ApplicationFailure` of `failureType`, `<label>: <reason>`
 * (`input 'doc': File not found`); database and store errors are rethrown as they are (retried).
 */
export async function readRunFile(db: Database, store: FileStore, request: {
  runId: string; handle: string; maxBytes: number; label: string; failureType: string;
}): Promise<{ bytes: Buffer; originalName: string | null; contentType: string }> {
  const refuse = (reason: string) => ApplicationFailure.nonRetryable(`${request.label}: ${reason}`, request.failureType);
  const run = await db.selectFrom('runs')
    .innerJoin('deployments', 'deployments.id', 'runs.deployment_id')
    .select('deployments.project_id').where('runs.id', '=', request.runId).executeTakeFirst();
  if (!run) throw refuse('the run was not found');
  try {
    const file = await readFileBuffer(db, store, request.handle, run.project_id, { maxBytes: request.maxBytes });
    return { bytes: file.bytes, originalName: file.originalName, contentType: file.contentType };
  } catch (error) {
    // 404 (missing, deleted, another project's file), 413 (too large): retrying changes nothing.
    if (error instanceof AppError && error.status < 500) throw refuse(error.message);
    throw error;
  }
}
