// The contract between the run workflow and the activities behind I/O blocks. The workflow renders
// every template itself and passes resolved values, so an activity never sees other blocks' data.
// Values too large for workflow history travel as claims (shared/app-runs/claims.ts): a request the
// workflow rendered, a result, a PDF input's value.

import type { Claim } from './claims.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

export interface HttpBlockRequest { runId: string; blockId: string; method: HttpMethod; url: string; headers: Record<string, string>; body: unknown }
export interface HttpBlockResult { status: number; headers: Record<string, string>; body: unknown }

export interface LlmBlockRequest {
  runId: string; blockId: string; model: string; prompt: string; system?: string; temperature?: number; maxTokens?: number;
  /** A team provider's name (docs/llm-providers.md); only the name crosses the workflow, never a URL or key. */
  provider?: string;
}
export interface LlmBlockResult { text: string; usage: { promptTokens: number; completionTokens: number; totalTokens: number } | null }

/**
 * An I/O block's call whose rendering is stored as `request:<blockId>` (an `IoBlockCall` of
 * workflows/app-runs/evaluate.ts); the activity resolves it before running.
 */
export interface ClaimedIoRequest { runId: string; blockId: string; claimedRequest: Claim }

/** Results over the claim threshold are stored as `output:<blockId>` and returned as claims. */
export interface IoBlockActivities {
  runHttpBlock(input: HttpBlockRequest | ClaimedIoRequest): Promise<HttpBlockResult | Claim>;
  runLlmBlock(input: LlmBlockRequest | ClaimedIoRequest): Promise<LlmBlockResult | Claim>;
}

/**
 * An `input` block of `valueType: 'pdf'` whose value is a PDF: a file handle (`wf-file:<id>` or
 * `storage://<id>`, read from the run's project), `data:application/pdf;base64,…` or bare base64.
 */
export interface PdfInputRequest { runId: string; blockId: string; value: string | Claim; inputName?: string }
export interface PdfInputResult { text: string; pages: number }

export interface PdfInputActivities {
  /** A large text comes back as a claim (`output:<blockId>`). */
  extractPdfText(input: PdfInputRequest): Promise<{ text: string | Claim; pages: number }>;
}
