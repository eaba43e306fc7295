// openapi.yaml's types, generated once for the console and the app: the SDK's sdk/src/schema.d.ts
// (`npm run generate` in sdk/). Types only: nothing of the SDK is bundled.
export type { components, paths } from '../../../sdk/src/schema';
