import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  createDocument, getDocument, listDeployments, listDocuments, updateDocument,
} from '../../../shared/documents/service.js';
import { publishDocument } from '../../../shared/publishing/service.js';
import type { AppDeps } from '../../deps.js';
import { accessCallerOf } from '../../access-caller.js';

const tags = ['editor'];
const projectParams = z.object({ projectId: z.uuid() });
const documentParams = z.object({ documentId: z.uuid() });
const documentName = z.string().trim().min(1).max(200);
// Checked against the graph format by the service, so that problems name block ids (400 invalid_graph).
const graphBody = z.record(z.string(), z.unknown()).describe('workflow graph: { blocks, edges } (CONTRACTS.md "Workflow graph format")');

const documentView = z.object({
  id: z.string(), projectId: z.string(), name: z.string(), graph: z.unknown(), createdAt: z.string(), updatedAt: z.string(),
});
const apiSchemaView = z.object({
  inputs: z.array(z.object({
    blockId: z.string(), name: z.string(), valueType: z.string(), required: z.boolean(), default: z.unknown().optional(),
  })),
});
const deploymentView = z.object({
  id: z.string(), documentId: z.string(), version: z.string(), visibility: z.enum(['private', 'public']),
  apiSchema: apiSchemaView, createdAt: z.string(),
});

/** The editor API (CONTRACTS.md "Editor API"): documents are drafts; publishing makes an immutable deployment. */
export const documentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, deployments }) => {
  app.post('/projects/:projectId/documents', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Create a document (a draft workflow graph) in a project',
      params: projectParams,
      body: z.object({ name: documentName, graph: graphBody }),
      response: { 201: z.object({ document: documentView }) },
    },
  }, async (request, reply) => {
    const document = await createDocument(db, accessCallerOf(request), { projectId: request.params.projectId, ...request.body });
    reply.code(201);
    return { document };
  });

  app.get('/projects/:projectId/documents', {
    config: { access: 'combined' },
    schema: { tags, summary: 'List the project documents, newest first', params: projectParams, response: { 200: z.object({ documents: z.array(documentView) }) } },
  }, async (request) => ({ documents: await listDocuments(db, accessCallerOf(request), request.params.projectId) }));

  app.get('/documents/:documentId', {
    config: { access: 'combined' },
    schema: { tags, summary: 'Read a document', params: documentParams, response: { 200: z.object({ document: documentView }) } },
  }, async (request) => ({ document: await getDocument(db, accessCallerOf(request), request.params.documentId) }));

  app.put('/documents/:documentId', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Rename a document or replace its graph (published deployments are not affected)',
      params: documentParams,
      body: z.object({ name: documentName.optional(), graph: graphBody.optional() })
        .refine((b) => b.name !== undefined || b.graph !== undefined, { message: 'give name, graph or both' }),
      response: { 200: z.object({ document: documentView }) },
    },
  }, async (request) => ({ document: await updateDocument(db, accessCallerOf(request), request.params.documentId, request.body) }));

  app.post('/documents/:documentId/publish', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Publish the current graph as a new deployment (project administrators)',
      params: documentParams,
      body: z.object({
        version: z.string().optional().describe('MAJOR.MINOR; default: the next minor after the highest published'),
        visibility: z.enum(['private', 'public']).optional().describe('default private'),
      }).nullish().describe('may be omitted: every field has a default'),
      response: { 201: z.object({ deployment: deploymentView }) },
    },
  }, async (request, reply) => {
    const deployment = await publishDocument(db, accessCallerOf(request), request.params.documentId, request.body ?? {});
    // Other processes hear of it by NOTIFY; this one must not answer a run from before it.
    deployments.evict(request.params.documentId);
    reply.code(201);
    return { deployment };
  });

  app.get('/documents/:documentId/deployments', {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'List the document deployments, newest (highest version) first',
      params: documentParams, response: { 200: z.object({ deployments: z.array(deploymentView) }) },
    },
  }, async (request) => ({ deployments: await listDeployments(db, accessCallerOf(request), request.params.documentId) }));
};
