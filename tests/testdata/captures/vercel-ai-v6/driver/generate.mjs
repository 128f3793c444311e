// Capture driver (Node side): ai 6 + @ai-sdk/anthropic with experimental_telemetry.
//
// Started by ../generate.py, which runs the fake Anthropic server (tests/fakes/fake_anthropic.py)
// and the OTLP capture server (tests/fakes/otlp_capture.py) on 127.0.0.1 and passes their URLs in
// ANTHROPIC_BASE_URL and OTLP_ENDPOINT. Spans go through the real OTel JS SDK (NodeTracerProvider,
// BatchSpanProcessor, OTLP/HTTP protobuf exporter); the AI SDK takes the registered global tracer,
// so its scope is `ai`. Prints one line `RESULT <json>`: what the app sent and received per turn,
// from which ../generate.py writes the expectations. No scorecar code.
//
// Usage: node generate.mjs <scenario>   (scenarios in SCENARIOS below)

import { createRequire } from 'node:module';

import { createAnthropic } from '@ai-sdk/anthropic';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const require = createRequire(import.meta.url);
const AI_VERSION = require('ai/package.json').version;
const PROVIDER_VERSION = require('@ai-sdk/anthropic/package.json').version;

const MODEL = 'claude-haiku-5-5';
const SYSTEM_PROMPT = 'You are a weather bot. Answer in one short sentence.';
const TURN1_USER = 'What is the weather in Paris?';
const TURN2_USER = 'Should I take an umbrella?';
const OBJECT_PROMPT = 'What is the weather in Paris? Answer as a JSON object.';
const FUNCTION_ID = 'weather-agent';
const SESSION_ID = 'conv-42';
const WEATHER = { Paris: { temp_c: 14, conditions: 'rain' }, Rome: { temp_c: 21, conditions: 'sunny' } };
// two_tools_and_a_failure (see ../../_common.py): two cities in one reply, Berlin's tool throws;
// then the same tool twice in sequence.
const MULTI_TURN1_USER = 'What is the weather in Paris and in Berlin?';
const MULTI_TURN2_USER = 'And in Rome? Please check it twice.';
const FAILING_CITY = 'Berlin';
const TOOL_ERROR = 'weather service unavailable for Berlin';

const SCENARIOS = {
  generate_two_turns_tool: { mode: 'generate', record: true },
  stream_two_turns_tool: { mode: 'stream', record: true },
  generate_two_turns_tool_no_content: { mode: 'generate', record: false },
  generate_object: { mode: 'object', record: true },
  // The tool returns its JSON as a string (common in apps): ai.toolCall.result is then double-encoded.
  generate_two_turns_tool_string_result: { mode: 'generate', record: true, stringResult: true },
  generate_two_tools_and_a_failure: { mode: 'generate', record: true, multi: true },
};

const scenario = process.argv[2];
const spec = SCENARIOS[scenario];
if (!spec) throw new Error(`unknown scenario ${scenario}`);

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'weather-app', 'deployment.environment': 'capture' }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${process.env.OTLP_ENDPOINT}/v1/traces` }))],
});
provider.register();

const anthropic = createAnthropic({ baseURL: `${process.env.ANTHROPIC_BASE_URL}/v1`, apiKey: process.env.ANTHROPIC_API_KEY });

const telemetry = {
  isEnabled: true,
  functionId: FUNCTION_ID,
  metadata: { sessionId: SESSION_ID },
  recordInputs: spec.record,
  recordOutputs: spec.record,
};

const tools = {
  get_weather: tool({
    description: 'Current weather for a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      if (spec.multi && city === FAILING_CITY) throw new Error(TOOL_ERROR);
      const result = WEATHER[city] ?? { temp_c: null, conditions: 'unknown' };
      return spec.stringResult ? JSON.stringify(result) : result;
    },
  }),
};

// One turn record: the steps as the app received them (text, tool calls, tool results).
function turnRecord(userText, history, steps) {
  const out = { user: userText, history, steps: [] };
  for (const step of steps) {
    out.steps.push({
      text: step.text,
      toolCalls: step.toolCalls.map((c) => ({ toolCallId: c.toolCallId, toolName: c.toolName, input: c.input })),
      toolResults: step.toolResults.map((r) => ({ toolCallId: r.toolCallId, output: r.output })),
      // A tool that threw: the SDK keeps a `tool-error` content part and sends the model an
      // `error-text` output (Anthropic: tool_result with is_error: true).
      toolErrors: step.content
        .filter((p) => p.type === 'tool-error')
        .map((p) => ({ toolCallId: p.toolCallId, error: p.error instanceof Error ? p.error.message : String(p.error) })),
      finishReason: step.finishReason,
    });
  }
  return out;
}

async function twoTurns(stream) {
  const messages = [];
  const turns = [];
  for (const userText of spec.multi ? [MULTI_TURN1_USER, MULTI_TURN2_USER] : [TURN1_USER, TURN2_USER]) {
    const history = structuredClone(messages);
    messages.push({ role: 'user', content: userText });
    const args = {
      model: anthropic(MODEL),
      system: SYSTEM_PROMPT,
      messages: [...messages],
      tools,
      stopWhen: stepCountIs(5),
      experimental_telemetry: telemetry,
    };
    let steps, response;
    if (stream) {
      const result = streamText(args);
      for await (const _ of result.textStream) {
        // read the stream to the end, as a UI would
      }
      steps = await result.steps;
      response = await result.response;
    } else {
      const result = await generateText(args);
      steps = result.steps;
      response = result.response;
    }
    turns.push(turnRecord(userText, history, steps));
    messages.push(...response.messages); // the SDK keeps no memory: the app resends the history
  }
  return turns;
}

async function objectTurn() {
  const result = await generateObject({
    model: anthropic(MODEL),
    system: SYSTEM_PROMPT,
    prompt: OBJECT_PROMPT,
    schema: z.object({ city: z.string(), temp_c: z.number(), conditions: z.string() }),
    experimental_telemetry: telemetry,
  });
  return [{ user: OBJECT_PROMPT, history: [], object: result.object }];
}

const turns = spec.mode === 'object' ? await objectTurn() : await twoTurns(spec.mode === 'stream');
await provider.shutdown(); // flushes the batch processor into the capture
console.log(`RESULT ${JSON.stringify({ aiVersion: AI_VERSION, providerVersion: PROVIDER_VERSION, turns })}`);
