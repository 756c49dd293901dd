import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../shared/db/client.js';
import { isClaim, type Claim } from '../../shared/app-runs/claims.js';
import type { PdfInputRequest, PdfInputResult } from '../../shared/app-runs/contracts.js';
import { pdfSourceOf, plainPdfInput } from '../../shared/app-runs/evaluate.js';
import { resolveClaims, storeClaim } from './claim-store.js';
import { decodeBase64, readRunFile } from './run-files.js';
import { createFileStore, parseFileHandle, type FileStore } from '../../shared/storage/index.js';

export const PDF_INPUT_MAX_BYTES = 20 * 1024 * 1024;
export const PDF_INPUT_MAX_PAGES = 500;

const DATA_URI_PREFIX = 'data:application/pdf;base64,';
const PDF_MAGIC = Buffer.from('%PDF-', 'latin1');

/** A failure retrying cannot fix: the block fails with this message. */
const refuse = (message: string, type = 'PdfInputRejected') => ApplicationFailure.nonRetryable(message, type);

/** The text of every page (items joined with spaces, pages with blank lines); throws for bytes pdf.js cannot read. */
export async function pdfToText(bytes: Uint8Array, maxPages = PDF_INPUT_MAX_PAGES): Promise<{ text: string; pages: number } | { tooManyPages: number }> {
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = getDocument({ data: new Uint8Array(bytes), useSystemFonts: true, isEvalSupported: false, disableFontFace: true, verbosity: 0 });
  const doc = await task.promise;
  try {
    if (doc.numPages > maxPages) return { tooManyPages: doc.numPages };
    const pages: string[] = [];
    for (let n = 1; n <= doc.numPages; n += 1) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      pages.push(content.items.map((item) => ('str' in item ? item.str : '')).join(' ').replace(/[ \t]+/g, ' ').trim());
      page.cleanup();
    }
    return { text: pages.join('\n\n'), pages: doc.numPages };
  } finally {
    await task.destroy();
  }
}

export interface PdfInputDeps {
  db: Database;
  config: Pick<Config, 'DATA_DIR'>;
  /** Defaults to the local-disk store under DATA_DIR/files (the one uploads go to). */
  store?: FileStore;
}

/** `extractPdfText`: a PDF input (file handle, `data:application/pdf;base64,…` or bare base64) → its text. */
export function createPdfInputActivities(deps: PdfInputDeps) {
  const store = deps.store ?? createFileStore(deps.config);

  const loadBytes = async (input: PdfInputRequest & { value: string }, label: string): Promise<Buffer> => {
    const value = input.value.trim();
    if (parseFileHandle(value)) {
      const file = await readRunFile(deps.db, store, {
        runId: input.runId, handle: value, maxBytes: PDF_INPUT_MAX_BYTES, label: `input ${label}`, failureType: 'PdfInputRejected',
      });
      return file.bytes;
    }
    const encoded = value.startsWith(DATA_URI_PREFIX) ? value.slice(DATA_URI_PREFIX.length) : value;
    const bytes = decodeBase64(encoded);
    if (!bytes) throw refuse(`input ${label} is not a readable PDF (invalid base64)`);
    return bytes;
  };

  return {
    /**
     * A claimed value (a large input) is read from run_payloads first; when it is not a PDF after
     * all, the block's output is the value itself, as shared/app-runs/evaluate.ts would give it.
     * A text over the claim threshold comes back as a claim (`output:<blockId>`).
     */
    async extractPdfText(request: PdfInputRequest): Promise<PdfInputResult> {
      const label = `'${request.inputName ?? request.blockId}'`;
      let source = request.value;
      if (isClaim(source)) {
        const value = await resolveClaims<unknown>(deps.db, request.runId, source);
        const pdf = pdfSourceOf(value);
        if (pdf === null) {
          // Not a PDF: plain text (or any JSON value) — the `text` field carries the block's output.
          return { text: await storeClaim(deps.db, request.runId, `output:${request.blockId}`, plainPdfInput(value)) as string | Claim, pages: 0 };
        }
        source = pdf;
      }
      const input = { ...request, value: source };
      const bytes = await loadBytes(input, label);
      if (bytes.length > PDF_INPUT_MAX_BYTES) throw refuse(`input ${label}: the PDF is larger than ${PDF_INPUT_MAX_BYTES} bytes`);
      if (!bytes.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) throw refuse(`input ${label} is not a readable PDF`);
      let result: Awaited<ReturnType<typeof pdfToText>>;
      try {
        result = await pdfToText(bytes);
      } catch {
        throw refuse(`input ${label} is not a readable PDF`);
      }
      if ('tooManyPages' in result) throw refuse(`input ${label}: the PDF has ${result.tooManyPages} pages; at most ${PDF_INPUT_MAX_PAGES} are read`);
      return { text: await storeClaim(deps.db, input.runId, `output:${input.blockId}`, result.text), pages: result.pages };
    },
  };
}
