// Capture driver: @mastra/core 1.71 + @mastra/memory (LibSQL :memory:) + @mastra/otel-exporter.
//
// Runs a real Mastra agent with memory (working memory on), a real tool, and Mastra's own
// mock model (MastraLanguageModelV2Mock from @mastra/core/test-utils/llm-mock) scripted step
// by step. Mastra's OtelExporter posts OTLP/HTTP protobuf to the loopback capture server
// (tests/fakes/otlp_capture.py, started here as a child process with python3), which writes
// ../<scenario>.otlp.jsonl. The expectations ../<scenario>.expected.json are written from the
// script and checked against the prompts the mock model actually received. No scorecar code.
// A live Mastra scorer on the agent (createScorer, sampling rate 1) records the run Mastra hands
// it after every turn into ../<scenario>.live_scorer_runs.json (input: inputMessages,
// rememberedMessages, systemMessages, taggedSystemMessages; output); the expectations'
// taggedSystemMessages come from it. Mastra runs live scorers only with storage on the Mastra
// instance (LibSQL :memory:); the scorer's own scorer_run traces are not exported.
//
// Regenerate (from this folder; needs Node 20 and a python3 with protobuf + opentelemetry-proto,
// e.g. the repository's own environment after `pip install -e .`):
//
//     npm ci && node generate.mjs
//
// Scenarios: three_turns_memory_tool (agent.generate) and three_turns_memory_tool_stream
// (agent.stream), each a three-turn thread: turn 1 calls get_weather(Paris), turn 2 is a
// follow-up answered from memory, turn 3 passes a per-call `system` option and calls
// get_weather(Berlin). two_tools_and_a_failure (see ../../_common.py): turn 1 asks for Paris and
// Berlin and the model calls get_weather for both in ONE step (parallel); Berlin's tool throws;
// turn 2 calls get_weather(Rome) twice in sequence. processor_retry: an output processor rejects
// the first answer of turn 1 once (abort(reason, { retry: true }), maxProcessorRetries 1) and
// Mastra retries the step with the feedback as a system message (tag processor-retry-feedback).
// `node generate.mjs <scenario>` runs one.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { Agent } from '@mastra/core/agent';
import { createScorer } from '@mastra/core/evals';
import { Mastra } from '@mastra/core/mastra';
import { MastraLanguageModelV2Mock } from '@mastra/core/test-utils/llm-mock';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore, LibSQLVector } from '@mastra/libsql';
import { Memory } from '@mastra/memory';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { z } from 'zod';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = resolve(HERE, '..');
const CAPTURE_SERVER = resolve(HERE, '../../../../fakes/otlp_capture.py');
const require = createRequire(import.meta.url);
const CORE_VERSION = require('@mastra/core/package.json').version;
const EXPORTER_VERSION = require('@mastra/otel-exporter/package.json').version;

const AGENT_ID = 'weather-agent';
const AGENT_NAME = 'Weather Agent';
const MODEL_ID = 'mock-weather-model';
const INSTRUCTIONS = 'You are a weather bot. Answer in one short sentence.';
const CALL_SYSTEM = 'Always use degrees Celsius.';
const THREAD_ID = 'thread-ana';
const RESOURCE_ID = 'user-ana';
const WORKING_MEMORY_TEMPLATE = '# User\n- Name:\n- Home city:\n';
const WEATHER = {
  Paris: { temp_c: 14, conditions: 'rain' },
  Berlin: { temp_c: 9, conditions: 'cloudy' },
  Rome: { temp_c: 21, conditions: 'sunny' },
};

// The conversation script: per turn, the user text, the model steps, the per-call system option.
const TURNS = [
  {
    user: 'What is the weather in Paris?',
    steps: [
      { text: null, toolCalls: [{ toolCallId: 'call_paris_1', toolName: 'get_weather', args: { city: 'Paris' } }] },
      { text: 'It is 14°C and raining in Paris.' },
    ],
  },
  {
    user: 'Should I take an umbrella?',
    steps: [{ text: 'Yes, take an umbrella: it is raining in Paris.' }],
  },
  {
    user: 'And in Berlin?',
    system: CALL_SYSTEM,
    steps: [
      { text: null, toolCalls: [{ toolCallId: 'call_berlin_1', toolName: 'get_weather', args: { city: 'Berlin' } }] },
      { text: 'It is 9°C and cloudy in Berlin.' },
    ],
  },
];

// A one-turn thread whose tool call fails: the tool throws, Mastra hands the error to the model.
const ERROR_TURNS = [
  {
    user: 'What is the weather in Atlantis?',
    steps: [
      { text: null, toolCalls: [{ toolCallId: 'call_atlantis_1', toolName: 'get_weather', args: { city: 'Atlantis' }, error: true }] },
      { text: 'Sorry, I could not get the weather for Atlantis.' },
    ],
  },
];

// two_tools_and_a_failure: two tool calls in one model step, Berlin's tool throws (failingCity);
// then the same tool twice in sequence. No lead-in texts (agent.generate().text concatenates the
// text of all steps).
const MULTI_TOOL_ERROR = 'weather service unavailable for Berlin';
const MULTI_TURNS = [
  {
    user: 'What is the weather in Paris and in Berlin?',
    steps: [
      {
        text: null,
        toolCalls: [
          { toolCallId: 'call_paris_1', toolName: 'get_weather', args: { city: 'Paris' } },
          { toolCallId: 'call_berlin_1', toolName: 'get_weather', args: { city: 'Berlin' }, error: true },
        ],
      },
      { text: 'It is 14°C and raining in Paris; the weather for Berlin is unavailable.' },
    ],
  },
  {
    user: 'And in Rome? Please check it twice.',
    steps: [
      { text: null, toolCalls: [{ toolCallId: 'call_rome_1', toolName: 'get_weather', args: { city: 'Rome' } }] },
      { text: null, toolCalls: [{ toolCallId: 'call_rome_2', toolName: 'get_weather', args: { city: 'Rome' } }] },
      { text: 'It is 21°C and sunny in Rome.' },
    ],
  },
];

// semantic_recall_other_thread: two threads of one resource. Semantic recall (scope resource)
// finds turn 1 of the first thread for the question on the second and Mastra hands it to the
// model as a system message ("…remembered from a different conversation…", tag `memory`).
const RECALL_TURNS = [
  { user: 'I live in Paris.', thread: 'thread-ana-home', steps: [{ text: 'Noted: you live in Paris.' }] },
  { user: 'Where do I live?', thread: 'thread-ana-trip', steps: [{ text: 'You live in Paris.' }] },
];

// processor_retry: an output processor (RETRY_PROCESSOR) rejects an answer in °F once with a
// reason, and Mastra retries the step with "[Processor Feedback] Your previous response was not
// accepted: <reason>. …" as a system message (tag processor-retry-feedback) in the retried step's
// prompt. A step marked `rejected` is the answer the processor rejects: never the run's answer,
// never remembered. Turn 2 (no rejection) gets turn 1 from memory: the accepted answer only.
const RETRY_REASON = 'Answer in degrees Celsius';
const RETRY_TURNS = [
  {
    user: 'What is the weather in Paris?',
    steps: [
      { text: null, toolCalls: [{ toolCallId: 'call_paris_1', toolName: 'get_weather', args: { city: 'Paris' } }] },
      { text: 'It is 57°F and raining in Paris.', rejected: true },
      { text: 'It is 14°C and raining in Paris.' },
    ],
  },
  {
    user: 'Should I take an umbrella?',
    steps: [{ text: 'Yes, take an umbrella: it is raining in Paris.' }],
  },
];

// The output processor of processor_retry: rejects a step whose text is in degrees Fahrenheit,
// asking for a retry (Mastra retries up to the agent's maxProcessorRetries).
const RETRY_PROCESSOR = {
  id: 'celsius-guard',
  name: 'Celsius guard',
  processOutputStep({ text, abort, messages }) {
    if (text && text.includes('°F')) abort(RETRY_REASON, { retry: true });
    return messages; // unchanged (an empty list would clear the turn's messages)
  },
};
const retryFeedback = (reason) =>
  `[Processor Feedback] Your previous response was not accepted: ${reason}. Please try again with the feedback in mind.`;

// A deterministic stand-in embedder (AI SDK EmbeddingModelV2): words hashed into 8 buckets.
const EMBEDDER = {
  specificationVersion: 'v2',
  provider: 'mock',
  modelId: 'mock-embedder',
  maxEmbeddingsPerCall: 100,
  supportsParallelCalls: true,
  doEmbed: async ({ values }) => ({
    embeddings: values.map((text) => {
      const v = new Array(8).fill(0.01);
      for (const w of text.toLowerCase().split(/\W+/)) if (w) v[[...w].reduce((a, c) => a + c.charCodeAt(0), 0) % 8] += 1;
      return v;
    }),
  }),
};

// ------------------------------------------------------------------------------ capture server

async function startCapture(path) {
  const child = spawn(process.env.PYTHON || 'python3', [CAPTURE_SERVER, '--out', path], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`capture server exited (${code})`)));
    lines.on('line', (line) => {
      const m = /^PORT (\d+)$/.exec(line);
      if (m) ok(Number(m[1]));
      else if (line.startsWith('WROTE')) console.log(`  capture: ${line}`);
    });
  });
  process.once('exit', () => child.kill()); // never leave it behind when the driver fails
  const stop = () =>
    new Promise((ok) => {
      child.once('exit', ok);
      child.stdin.end(); // EOF on stdin stops it after the last request is written
    });
  return { port, stop };
}

// ------------------------------------------------------------------------------- mock model

function scriptedModel(script) {
  const queue = [...script];
  const received = [];
  const next = (options) => {
    received.push(options.prompt);
    const step = queue.shift();
    if (!step) throw new Error('mock model: no scripted step left');
    return step;
  };
  const usage = { inputTokens: 20, outputTokens: 10, totalTokens: 30 };
  const finishOf = (step) => (step.toolCalls?.length ? 'tool-calls' : 'stop');
  let n = 0;
  const model = new MastraLanguageModelV2Mock({
    provider: 'mock',
    modelId: MODEL_ID,
    doGenerate: async (options) => {
      const step = next(options);
      const content = [];
      if (step.text) content.push({ type: 'text', text: step.text });
      for (const c of step.toolCalls ?? []) {
        content.push({ type: 'tool-call', toolCallId: c.toolCallId, toolName: c.toolName, input: JSON.stringify(c.args) });
      }
      return { content, finishReason: finishOf(step), usage, warnings: [], request: {}, response: { id: `resp-${++n}`, modelId: MODEL_ID, timestamp: new Date() } };
    },
    doStream: async (options) => {
      const step = next(options);
      const id = `resp-${++n}`;
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'response-metadata', id, modelId: MODEL_ID, timestamp: new Date() },
      ];
      if (step.text) {
        parts.push({ type: 'text-start', id: 't1' });
        for (let i = 0; i < step.text.length; i += 8) parts.push({ type: 'text-delta', id: 't1', delta: step.text.slice(i, i + 8) });
        parts.push({ type: 'text-end', id: 't1' });
      }
      for (const c of step.toolCalls ?? []) {
        parts.push({ type: 'tool-call', toolCallId: c.toolCallId, toolName: c.toolName, input: JSON.stringify(c.args) });
      }
      parts.push({ type: 'finish', finishReason: finishOf(step), usage });
      const stream = new ReadableStream({
        start(controller) {
          for (const p of parts) controller.enqueue(p);
          controller.close();
        },
      });
      return { stream, request: {}, response: { headers: {} } };
    },
  });
  return { model, received, pending: () => queue.length };
}

// ------------------------------------------------------------------------ expectations

function toolCallExpectation(c, result, errorText) {
  if (c.error) {
    const out = { toolName: c.toolName, toolCallId: c.toolCallId, args: c.args, state: 'output-error' };
    if (errorText !== undefined) out.errorText = errorText;
    return out;
  }
  return { toolName: c.toolName, toolCallId: c.toolCallId, args: c.args, result, state: 'result' };
}

// What a turn becomes in memory, in the shape the expectations use (wire order: the
// assistant message that asked for the tool, with its result folded in, then the answer).
function rememberedAfter(turn, results, errors = {}) {
  const out = [{ role: 'user', text: turn.user }];
  for (const step of turn.steps.filter((s) => !s.rejected)) {
    const calls = (step.toolCalls ?? []).map((c) => toolCallExpectation(c, results[c.toolCallId], errors[c.toolCallId]));
    const msg = { role: 'assistant', text: step.text ?? '' };
    if (calls.length) msg.toolCalls = calls;
    out.push(msg);
  }
  return out;
}

// Reads a provider prompt (LanguageModelV2Prompt) the mock model received into the same shape:
// used only to check that the scripted expectation matches what Mastra really sent.
function promptView(prompt) {
  const system = [];
  const messages = [];
  const byId = new Map();
  for (const m of prompt) {
    if (m.role === 'system') {
      system.push(m.content);
      continue;
    }
    if (m.role === 'tool') {
      for (const p of m.content) {
        const call = byId.get(p.toolCallId);
        if (call) {
          const o = p.output;
          if (typeof o?.type === 'string' && o.type.startsWith('error')) {
            // A tool that threw: the model is handed error-text / error-json.
            call.state = 'output-error';
            call.errorText = typeof o.value === 'string' ? o.value : JSON.stringify(o.value);
            continue;
          }
          call.result = o?.type === 'json' ? o.value : o?.type === 'text' ? safeJson(o.value) : o;
          call.state = 'result';
        }
      }
      continue;
    }
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const text = parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const msg = { role: m.role, text };
    const calls = parts
      .filter((p) => p.type === 'tool-call')
      .map((p) => {
        const call = { toolName: p.toolName, toolCallId: p.toolCallId, args: typeof p.input === 'string' ? safeJson(p.input) : p.input, state: 'call' };
        if (p.error) call.error = true;
        byId.set(p.toolCallId, call);
        return call;
      });
    if (calls.length) msg.toolCalls = calls;
    messages.push(msg);
  }
  return { system, messages };
}

function safeJson(s) {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
  return v;
}

function sameJson(a, b) {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

// ------------------------------------------------------------------------------ live scorer

// A live scorer on the agent (sampling rate 1): Mastra hands it, after every generate/stream,
// the run it builds from its MessageList. It records what it receives; `next(i)` waits for the
// i-th run (Mastra runs scorers in a hook, after the call has returned).
function liveScorer() {
  const runs = [];
  const scorer = createScorer({
    id: 'capture-live-run',
    name: 'Capture live run',
    description: 'Records the run a live Mastra scorer receives.',
    type: 'agent',
  }).generateScore(({ run }) => {
    runs.push({ input: run.input ?? null, output: run.output ?? null });
    return 1;
  });
  const next = async (i) => {
    for (let waited = 0; runs.length <= i; waited += 10) {
      if (waited > 10_000) throw new Error(`live scorer: no run for turn ${i + 1}`);
      await new Promise((ok) => setTimeout(ok, 10));
    }
    return runs[i];
  };
  return { scorer, runs, next };
}

// Tags Mastra gives a system message whose text the app chose (no fixed header) and that its
// OTel export drops: `user-provided` is the per-call `system` option. Nothing in the spans tells
// it from any other system message, so the expectation (what scorecar must print) files it
// under `runtime`, as scorecar does every system message it cannot recognise. The live run keeps
// Mastra's tag (<scenario>.live_scorer_runs.json; tests/transforms/test_mastra_live_scorer.py).
const TAGS_LOST_IN_EXPORT = { 'user-provided': 'runtime' };

function systemText(m) {
  const c = typeof m === 'string' ? m : m?.content;
  if (typeof c === 'string') return c;
  return Array.isArray(c) ? c.filter((p) => p.type === 'text').map((p) => p.text).join('') : '';
}

function dbText(m) {
  const c = m?.content;
  if (typeof c === 'string') return c;
  if (typeof c?.content === 'string') return c.content;
  return (c?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

// The expectation's taggedSystemMessages: what the live scorer received for this turn, checked
// against the prompt the mock model got (the tagged messages are exactly its system messages
// besides the instructions, in prompt order) and against the script (instructions, new input).
function expectedTags(liveRun, index, turn, promptExtras) {
  const where = `turn ${index + 1}: live scorer`;
  const input = liveRun.input;
  if (!input || typeof input !== 'object' || !input.taggedSystemMessages) {
    throw new Error(`${where} received no agent input: ${JSON.stringify(input)}`);
  }
  const system = input.systemMessages.map(systemText);
  if (!sameJson(system, [INSTRUCTIONS])) throw new Error(`${where}: systemMessages ${JSON.stringify(system)}`);
  const newInput = input.inputMessages.map(dbText);
  if (!sameJson(newInput, [turn.user])) throw new Error(`${where}: inputMessages ${JSON.stringify(newInput)}`);
  const live = Object.entries(input.taggedSystemMessages).map(([tag, msgs]) => [tag, msgs.map(systemText)]);
  if (!sameJson(live.flatMap(([, texts]) => texts), promptExtras)) {
    throw new Error(`${where}: taggedSystemMessages ${JSON.stringify(live).slice(0, 300)} are not the prompt's extra system messages`);
  }
  const out = {};
  for (const [tag, texts] of live) (out[TAGS_LOST_IN_EXPORT[tag] ?? tag] ??= []).push(...texts);
  return out;
}

// ---------------------------------------------------------------------------------- scenario

async function runScenario(name, { stream, turns = TURNS, threadId = THREAD_ID, notes = null, failingCity = null, errorTexts = false, recall = false, retry = false }) {
  const TURNS = turns;
  const THREAD_ID = threadId;
  const capturePath = join(OUT, `${name}.otlp.jsonl`);
  const capture = await startCapture(capturePath);
  const script = TURNS.flatMap((t) => t.steps);
  const mock = scriptedModel(script);
  const toolResults = {};
  const toolErrors = {}; // toolCallId -> the error text the model was handed (errorTexts only)

  const getWeather = createTool({
    id: 'get_weather',
    description: 'Current weather for a city.',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ temp_c: z.number(), conditions: z.string() }),
    execute: async ({ city }) => {
      if (city === failingCity) throw new Error(MULTI_TOOL_ERROR);
      if (!(city in WEATHER)) throw new Error(`unknown city: ${city}`);
      return WEATHER[city];
    },
  });

  const vectorDir = recall ? mkdtempSync(join(tmpdir(), 'mastra-capture-')) : null;
  const memory = new Memory({
    storage: new LibSQLStore({ id: 'capture-memory', url: ':memory:' }),
    ...(recall ? { vector: new LibSQLVector({ id: 'capture-vector', url: `file:${join(vectorDir, 'vector.db')}` }), embedder: EMBEDDER } : {}),
    options: {
      lastMessages: 20,
      workingMemory: { enabled: true, template: WORKING_MEMORY_TEMPLATE },
      ...(recall ? { semanticRecall: { topK: 2, messageRange: 0, scope: 'resource' } } : {}),
      generateTitle: false,
    },
  });
  const live = liveScorer();
  const agent = new Agent({
    id: AGENT_ID,
    name: AGENT_NAME,
    instructions: INSTRUCTIONS,
    model: mock.model,
    tools: { get_weather: getWeather },
    memory,
    ...(retry ? { outputProcessors: [RETRY_PROCESSOR], maxProcessorRetries: 1 } : {}),
    scorers: { liveRun: { scorer: live.scorer, sampling: { type: 'ratio', rate: 1 } } },
  });
  const exporter = new OtelExporter({
    provider: { custom: { endpoint: `http://127.0.0.1:${capture.port}/v1/traces`, protocol: 'http/protobuf' } },
    resourceAttributes: { 'deployment.environment': 'capture' },
    signals: { traces: true, logs: false },
    logLevel: process.env.MASTRA_OTEL_DEBUG ? 'debug' : 'warn',
  });
  const mastra = new Mastra({
    agents: { weatherAgent: agent },
    observability: new Observability({
      configs: {
        otel: {
          serviceName: 'weather-app',
          exporters: [exporter],
          // The live scorer's own traces (scorer_run/scorer_step, roots of their own traces) stay
          // out of the capture: it holds what the app exports, as before the scorer was added.
          excludeSpanTypes: ['scorer_run', 'scorer_step'],
        },
      },
    }),
    // Mastra runs live scorers only when it has storage to save their scores in.
    storage: new LibSQLStore({ id: 'capture-scores', url: ':memory:' }),
    logger: false,
  });
  const weatherAgent = mastra.getAgent('weatherAgent');

  const runs = [];
  const liveRuns = [];
  const histories = new Map(); // thread -> what memory holds of it
  for (const [index, turn] of TURNS.entries()) {
    const before = mock.received.length;
    const thread = turn.thread ?? THREAD_ID;
    if (!histories.has(thread)) histories.set(thread, []);
    const history = histories.get(thread);
    const options = { memory: { thread, resource: RESOURCE_ID } };
    if (turn.system) options.system = turn.system;
    let text;
    let toolResultsSeen;
    if (stream) {
      const out = await weatherAgent.stream(turn.user, options);
      text = await out.text;
      toolResultsSeen = await out.toolResults;
    } else {
      const out = await weatherAgent.generate(turn.user, options);
      text = out.text;
      toolResultsSeen = out.toolResults;
    }
    for (const r of toolResultsSeen ?? []) {
      const p = r.payload ?? r;
      toolResults[p.toolCallId] = p.result ?? p.output;
    }
    const liveRun = await live.next(index);
    liveRuns.push({ turn: index + 1, user: turn.user, run: liveRun });
    const finalText = turn.steps.at(-1).text;
    const liveAnswer = (liveRun.output ?? []).filter((m) => m.role === 'assistant').map(dbText).join('');
    if (liveAnswer !== finalText) throw new Error(`turn ${index + 1}: the live scorer got the answer ${JSON.stringify(liveAnswer)}, script says ${JSON.stringify(finalText)}`);
    if (text !== finalText) {
      if (!turn.steps.some((s) => s.rejected)) throw new Error(`turn ${index + 1}: agent answered ${JSON.stringify(text)}, script says ${JSON.stringify(finalText)}`);
      console.log(`  turn ${index + 1}: agent answered ${JSON.stringify(text)} (the rejected step's text kept), the live scorer ${JSON.stringify(liveAnswer)}`);
    }

    // What the model received on the first step of this turn.
    const view = promptView(mock.received[before]);
    const expectedRemembered = history.slice();
    const expectedInput = [{ role: 'user', text: turn.user }];
    const got = view.messages;
    if (!sameJson(got, [...expectedRemembered, ...expectedInput])) {
      console.error(`turn ${index + 1}: the prompt Mastra sent differs from the script:\n${JSON.stringify(got, null, 1)}`);
      throw new Error('prompt mismatch');
    }
    if (view.system[0] !== INSTRUCTIONS) throw new Error(`turn ${index + 1}: first system message is not the instructions`);
    // The first step's extra system messages, then any a later step of the turn adds (the
    // feedback of a retried step), in the order they appear.
    const runtime = view.system.slice(1);
    for (const prompt of mock.received.slice(before + 1)) {
      for (const s of promptView(prompt).system.slice(1)) if (!runtime.includes(s)) runtime.push(s);
    }
    if (turn.steps.some((s) => s.rejected) && !runtime.includes(retryFeedback(RETRY_REASON))) {
      throw new Error(`turn ${index + 1}: no retry feedback in the retried step's prompt: ${JSON.stringify(runtime).slice(0, 300)}`);
    }
    if (turn.system && !runtime.includes(turn.system)) throw new Error(`turn ${index + 1}: per-call system option not in the prompt`);
    if (!runtime.some((s) => s.includes('working memory') || s.includes('WORKING_MEMORY'))) {
      console.warn(`turn ${index + 1}: no working-memory system message seen: ${JSON.stringify(runtime).slice(0, 200)}`);
    }
    const tagged = expectedTags(liveRun, index, turn, runtime);

    if (errorTexts) {
      // The error text each failed call was reported with: what the model received next.
      for (const prompt of mock.received.slice(before)) {
        for (const m of promptView(prompt).messages) {
          for (const c of m.toolCalls ?? []) if (c.state === 'output-error') toolErrors[c.toolCallId] = c.errorText;
        }
      }
      for (const c of turn.steps.flatMap((s) => s.toolCalls ?? [])) {
        if (c.error && toolErrors[c.toolCallId] === undefined) throw new Error(`no error reported for ${c.toolCallId}`);
      }
    }
    const toolCalls = turn.steps
      .flatMap((s) => s.toolCalls ?? [])
      .map((c) => toolCallExpectation(c, toolResults[c.toolCallId], errorTexts ? toolErrors[c.toolCallId] : undefined));
    const run = {
      convention: 'mastra',
      entityName: AGENT_NAME,
      entityId: AGENT_ID,
      conversationId: thread,
      resourceId: RESOURCE_ID,
      systemMessages: [INSTRUCTIONS],
      taggedSystemMessages: tagged,
      inputMessages: expectedInput,
      rememberedMessages: expectedRemembered,
      output: { text: finalText, toolCalls },
      contentCaptured: true,
    };
    if (turn.thread) run.requestContext = { resourceId: RESOURCE_ID, threadId: thread };
    if (errorTexts) {
      // The whole-run shape the driver knows: the thread/resource it passed, and the output's
      // parts model step by model step (tool calls indexed into output.toolCalls).
      run.requestContext = { resourceId: RESOURCE_ID, threadId: THREAD_ID };
      let k = 0;
      run.output.parts = turn.steps.map((step) =>
        step.toolCalls?.length
          ? { step: [...(step.text ? [{ text: step.text }] : []), ...step.toolCalls.map(() => ({ toolCall: k++ }))] }
          : { text: step.text },
      );
    }
    runs.push(run);
    history.push(...rememberedAfter(turn, toolResults, errorTexts ? toolErrors : {}));
  }
  if (mock.pending() !== 0) throw new Error('not every scripted model step was used');

  await mastra.shutdown?.();
  await exporter.shutdown?.();
  await capture.stop();
  if (vectorDir) rmSync(vectorDir, { recursive: true, force: true });

  const expected = {
    library: 'mastra',
    libraryVersion: CORE_VERSION,
    exporterVersion: EXPORTER_VERSION,
    scenario: name,
    convention: 'mastra',
    notes: notes ??
      `A three-turn memory thread (thread ${THREAD_ID}, resource ${RESOURCE_ID}) on one Mastra agent with working memory ` +
      `enabled; ${stream ? 'agent.stream()' : 'agent.generate()'} per turn. Turns 2 and 3 get the earlier turns from memory ` +
      `(exact: model_generation input minus system minus mastra.agent_run.input). Turn 1 and 3 call get_weather ` +
      `(an execute_tool span under the model step). taggedSystemMessages: as the live Mastra scorer received them ` +
      `(${name}.live_scorer_runs.json): the working-memory message under "memory" every turn; turn 3 also the ` +
      `per-call system option "${CALL_SYSTEM}", which Mastra tags "user-provided" but the OTel export drops the tag ` +
      `and the text has no fixed header, hence "runtime". ` +
      `entityId/conversationId/resourceId are extra keys (target fields).`,
    runs,
  };
  writeFileSync(join(OUT, `${name}.expected.json`), JSON.stringify(expected, null, 2) + '\n');
  writeFileSync(join(OUT, `${name}.live_scorer_runs.json`), JSON.stringify(liveRuns, null, 2) + '\n');
  console.log(`${name}: ${runs.length} runs, ${mock.received.length} model calls`);
}

const SCENARIOS = {
  three_turns_memory_tool: { stream: false },
  three_turns_memory_tool_stream: { stream: true },
  tool_error: {
    stream: false,
    turns: ERROR_TURNS,
    threadId: 'thread-atlantis',
    notes:
      'One turn on a fresh thread (thread-atlantis): get_weather throws "unknown city: Atlantis". The execute_tool ' +
      'span carries error.type/error.message and no gen_ai.tool.call.result; Mastra hands the error to the model, whose ' +
      'second step answers. The tool call must come out with state output-error. Working memory is on (its message tagged "memory", as the live scorer received it).',
  },
  semantic_recall_other_thread: {
    stream: false,
    turns: RECALL_TURNS,
    recall: true,
    notes:
      'Semantic recall across threads (resource user-ana; LibSQLVector, a deterministic stand-in embedder, ' +
      'semanticRecall {topK 2, messageRange 0, scope resource}), working memory on, agent.generate() per turn. Turn 1 on ' +
      'thread-ana-home "I live in Paris."; turn 2 on a fresh thread-ana-trip "Where do I live?": no history in that ' +
      'thread, and Mastra adds turn 1 as a system message "The following messages were remembered from a different ' +
      'conversation: …" after the working-memory one. taggedSystemMessages as the live Mastra scorer received them: both ' +
      'under "memory". conversationId/requestContext.threadId: the thread of each turn.',
  },
  two_tools_and_a_failure: {
    stream: false,
    turns: MULTI_TURNS,
    threadId: 'thread-multi',
    failingCity: 'Berlin',
    errorTexts: true,
    notes:
      'Parallel tool calls on a fresh thread (thread-multi), agent.generate() per turn, working memory on (tagged "memory", as the live scorer received it). ' +
      'Turn 1 "What is the weather in Paris and in Berlin?": ONE model step with two tool-call parts (call_paris_1 ' +
      'Paris, call_berlin_1 Berlin): two execute_tool get_weather spans under that step; Berlin\'s tool throws ' +
      `Error("${MULTI_TOOL_ERROR}"): its span carries error.type/error.message and no gen_ai.tool.call.result, and ` +
      'Mastra hands the model an error output (errorText = what the model received). Step 2 answers about both. Turn 2 ' +
      '"And in Rome? Please check it twice.": sequential, call_rome_1 then, after its result, call_rome_2 (same tool ' +
      'name), then the answer (three model steps). Turn 2 gets turn 1 from memory, the failed call included (checked ' +
      'against the prompt the mock model received). No lead-in texts: agent.generate().text concatenates all steps.',
  },
};

SCENARIOS.processor_retry = {
  stream: false,
  turns: RETRY_TURNS,
  threadId: 'thread-retry',
  retry: true,
  notes:
    'An output processor (celsius-guard, processOutputStep) rejects an answer in °F once: abort("' + RETRY_REASON + '", ' +
    '{ retry: true }), the agent has maxProcessorRetries 1. Thread thread-retry, agent.generate() per turn, working ' +
    'memory on. Turn 1 "What is the weather in Paris?": get_weather(Paris), then the answer "It is 57°F and raining in ' +
    'Paris." which the processor rejects; Mastra retries that step with the system message "' + retryFeedback(RETRY_REASON) +
    '" (tag processor-retry-feedback, as the live scorer received it: in the retried step\'s prompt only) and the model ' +
    'answers "It is 14°C and raining in Paris." (the answer the live scorer received). Turn 2 "Should I take an ' +
    'umbrella?" gets turn 1 from memory (the accepted answer only, checked against the prompt the mock received) and ' +
    'is answered at once.',
};

const only = process.argv[2];
if (only && !SCENARIOS[only]) throw new Error(`unknown scenario ${only}`);
for (const [name, options] of Object.entries(SCENARIOS)) {
  if (!only || only === name) await runScenario(name, options);
}
