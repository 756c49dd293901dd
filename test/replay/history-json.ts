import { createRequire } from 'node:module';
import type { History } from '@temporalio/common/lib/proto-utils.js';

/**
 * Temporal's JSON history format (proto3 JSON, as `historyToJSON`, `temporal workflow show --output
 * json` and the Web UI's download write it), read back into the History message `Worker.runReplayHistories` takes.
 *
 * Why not the SDK's `historyFromJSON` (which `runReplayHistories` calls itself for a JSON history):
 * in this install npm nests one protobufjs@8 under each @temporalio package (the top-level copy is
 * @grpc/proto-loader's 7.x), and the SDK pairs @temporalio/common's protojson with the message types
 * of @temporalio/proto's copy, so protojson's `instanceof Type` check fails with "type must be a
 * Type". We do the same conversion with the protojson of the copy @temporalio/proto was built with,
 * found from @temporalio/proto's own folder: right whether npm nests protobufjs or hoists it.
 * scripts/capture-workflow-histories.ts writes the fixtures the same way.
 */
interface ProtoJson {
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
  toJson(type: unknown, message: unknown): unknown;
}

const requireHere = createRequire(import.meta.url);
const protoEntry = requireHere.resolve('@temporalio/proto');
const { fromJson, toJson } = createRequire(protoEntry)('protobufjs/ext/protojson') as ProtoJson;
const { patchProtobufRoot } = requireHere('@temporalio/proto/lib/patch-protobuf-root') as { patchProtobufRoot(root: unknown): { lookupType(name: string): unknown } };
const historyType = patchProtobufRoot(requireHere('@temporalio/proto')).lookupType('temporal.api.history.v1.History');

/** Tolerates fields a newer server or SDK adds, as the SDK's `historyFromJSON` does. */
export function historyFromJSON(json: unknown): History {
  return fromJson(historyType, json, { ignoreUnknownFields: true }) as History;
}

/** The inverse, as the SDK's `historyToJSON` (without its string formatting). */
export function historyToJSONObject(history: History): unknown {
  return toJson(historyType, history);
}
