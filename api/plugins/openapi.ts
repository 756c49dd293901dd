import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/** OpenAPI 3 from the routes' zod schemas: UI at /docs, the document at /docs/json. */
export const openapiPlugin = fp(async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Workflow Application Service', version: '0.1.0', description: 'Publish workflow apps and run them over HTTP, webhooks, schedules and connected accounts.' },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'Identity-provider JWT, API key (wfk-…), OAuth access token (wfo-…) or agent token (wfa-…)' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
}, { name: 'openapi' });
