// Capture driver (Node side): ai 7 + @ai-sdk/anthropic with @ai-sdk/otel's OpenTelemetry integration
// (registerTelemetry(new OpenTelemetry(...)): spans invoke_agent / step / chat / execute_tool).
//
// Started by ../generate.py, which runs the fake Anthropic server (tests/fakes/fake_anthropic.py)
// and the OTLP capture server (tests/fakes/otlp_capture.py) on 127.0.0.1 and passes their URLs in
// ANTHROPIC_BASE_URL and OTLP_ENDPOINT. Spans go through the real OTel JS SDK (NodeTracerProvider,
// BatchSpanProcessor, OTLP/HTTP protobuf exporter); @ai-sdk/otel takes the registered global tracer. Prints one line `RESULT <json>`: what the app sent and received per turn,
// from which ../generate.py writes the expectations. No scorecar code.
//
// Usage: node generate.mjs <scenario>   (scenarios in SCENARIOS below)

import { createRequire } from 'node:module';

import { createAnthropic } from '@ai-sdk/anthropic';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetry } from '@ai-sdk/otel';
import { generateText, registerTelemetry, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const require = createRequire(import.meta.url);
const AI_VERSION = require('ai/package.json').version;
const PROVIDER_VERSION = require('@ai-sdk/anthropic/package.json').version;
const OTEL_VERSION = require('@ai-sdk/otel/package.json').version;

const MODEL = 'claude-haiku-5-5';
const SYSTEM_PROMPT = 'You are a weather bot. Answer in one short sentence.';
const TURN1_USER = 'What is the weather in Paris?';
const TURN2_USER = 'Should I take an umbrella?';
const FUNCTION_ID = 'weather-agent';
const SESSION_ID = 'conv-42';
const WEATHER = { Paris: { temp_c: 14, conditions: 'rain' } };

const SCENARIOS = {
  generate_two_turns_tool: { mode: 'generate', record: true },
  stream_two_turns_tool: { mode: 'stream', record: true },
  generate_two_turns_tool_no_content: { mode: 'generate', record: false },
};

const scenario = process.argv[2];
const spec = SCENARIOS[scenario];
if (!spec) throw new Error(`unknown scenario ${scenario}`);

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'weather-app', 'deployment.environment': 'capture' }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${process.env.OTLP_ENDPOINT}/v1/traces` }))],
});
provider.register();
// Runtime context values are emitted only when both the integration and the call opt in.
registerTelemetry(new OpenTelemetry({ runtimeContext: true }));

const anthropic = createAnthropic({ baseURL: `${process.env.ANTHROPIC_BASE_URL}/v1`, apiKey: process.env.ANTHROPIC_API_KEY });

const telemetry = {
  isEnabled: true,
  functionId: FUNCTION_ID,
  includeRuntimeContext: { sessionId: true },
  recordInputs: spec.record,
  recordOutputs: spec.record,
};

const tools = {
  get_weather: tool({
    description: 'Current weather for a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
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
      finishReason: step.finishReason,
    });
  }
  return out;
}

async function twoTurns(stream) {
  const messages = [];
  const turns = [];
  for (const userText of [TURN1_USER, TURN2_USER]) {
    const history = structuredClone(messages);
    messages.push({ role: 'user', content: userText });
    const args = {
      model: anthropic(MODEL),
      system: SYSTEM_PROMPT,
      messages: [...messages],
      tools,
      stopWhen: stepCountIs(5),
      runtimeContext: { sessionId: SESSION_ID },
      telemetry,
    };
    let steps, responseMessages;
    if (stream) {
      const result = streamText(args);
      for await (const _ of result.textStream) {
        // read the stream to the end, as a UI would
      }
      steps = await result.steps;
      responseMessages = await result.responseMessages;
    } else {
      const result = await generateText(args);
      steps = result.steps;
      responseMessages = result.responseMessages;
    }
    turns.push(turnRecord(userText, history, steps));
    // The SDK keeps no memory: the app resends the history (in ai 7 `response.messages` is the last
    // step only; `responseMessages` accumulates every step).
    messages.push(...responseMessages);
  }
  return turns;
}

const turns = await twoTurns(spec.mode === 'stream');
await provider.shutdown(); // flushes the batch processor into the capture
console.log(`RESULT ${JSON.stringify({ aiVersion: AI_VERSION, providerVersion: PROVIDER_VERSION, otelVersion: OTEL_VERSION, turns })}`);
